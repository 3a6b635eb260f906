// Package mcpbridge serves a Tack server's MCP endpoint (/mcp, streamable
// HTTP) to an agent that starts its MCP servers as commands and speaks to
// them over stdio: `tack mcp`. It is an MCP client of /mcp and an MCP server
// on stdio, both the official SDK's, and adds nothing of its own: the tools
// and resource templates are the server's, listed from it, and every call,
// read and subscription is passed through, the server's notices back.
package mcpbridge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options say which server to bridge and as whom.
type Options struct {
	// Server is the Tack server's URL (http://127.0.0.1:8080).
	Server string
	// Token, when set, is sent as Authorization: Bearer.
	Token string
	// Session, when set, is the Tack session the tool calls land in
	// (the Tack-Session header).
	Session string
	// HTTPClient is the client of the server; nil is http.DefaultClient's
	// transport.
	HTTPClient *http.Client
}

// Endpoint is the URL of the server's MCP endpoint.
func Endpoint(server string) (string, error) {
	u, err := url.Parse(strings.TrimRight(server, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("-server %q is not an http(s) URL", server)
	}
	return u.String() + "/mcp", nil
}

// Run bridges local (the SDK's stdio transport, for `tack mcp`) to the
// server until either side ends.
func Run(ctx context.Context, local mcp.Transport, opts Options) error {
	endpoint, err := Endpoint(opts.Server)
	if err != nil {
		return err
	}
	base := http.DefaultTransport
	if opts.HTTPClient != nil && opts.HTTPClient.Transport != nil {
		base = opts.HTTPClient.Transport
	}
	hc := &http.Client{Transport: headers{token: opts.Token, session: opts.Session, next: base}}

	// No notice comes before a subscription, which the local server,
	// made once the server's capabilities are known, passes on.
	var srv atomic.Pointer[mcp.Server]
	client := mcp.NewClient(&mcp.Implementation{Name: "tack-mcp"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if s := srv.Load(); s != nil {
				_ = s.ResourceUpdated(ctx, req.Params)
			}
		},
	})
	remote, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", endpoint, err)
	}
	defer remote.Close()
	mirrored, err := mirror(ctx, remote)
	if err != nil {
		return err
	}
	srv.Store(mirrored)
	session, err := mirrored.Connect(ctx, local, nil)
	if err != nil {
		return err
	}
	ended := make(chan error, 2)
	go func() { ended <- session.Wait() }()
	go func() { ended <- remote.Wait() }()
	select {
	case err = <-ended:
	case <-ctx.Done():
	}
	_ = session.Close()
	return err
}

// mirror is a server that offers what remote does: its instructions, the
// tools and resource templates it lists, and subscriptions when it takes
// them, each passed through to it.
func mirror(ctx context.Context, remote *mcp.ClientSession) (*mcp.Server, error) {
	init := remote.InitializeResult()
	opts := &mcp.ServerOptions{Instructions: init.Instructions, Capabilities: &mcp.ServerCapabilities{},
		SupportedProtocolVersions: upTo(init.ProtocolVersion)}
	if r := init.Capabilities.Resources; r != nil && r.Subscribe {
		opts.SubscribeHandler = func(ctx context.Context, req *mcp.SubscribeRequest) error {
			return remote.Subscribe(ctx, req.Params)
		}
		opts.UnsubscribeHandler = func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
			return remote.Unsubscribe(ctx, req.Params)
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: init.ServerInfo.Name, Title: init.ServerInfo.Title, Version: init.ServerInfo.Version}, opts)
	for tool, err := range remote.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list the server's tools: %w", err)
		}
		srv.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return remote.CallTool(ctx, &mcp.CallToolParams{Meta: req.Params.Meta, Name: req.Params.Name, Arguments: req.Params.Arguments})
		})
	}
	if init.Capabilities.Resources == nil {
		return srv, nil
	}
	for tmpl, err := range remote.ResourceTemplates(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list the server's resource templates: %w", err)
		}
		srv.AddResourceTemplate(tmpl, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return remote.ReadResource(ctx, req.Params)
		})
	}
	return srv, nil
}

// upTo are the SDK's protocol versions up to the one the server chose: a
// call's _meta, passed through as it is, must be of a version the server
// speaks.
func upTo(version string) []string {
	var vs []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if v <= version { // the versions are dates
			vs = append(vs, v)
		}
	}
	return vs
}

// headers sends the token and the session binding on every request.
type headers struct {
	token, session string
	next           http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if h.token != "" {
		r.Header.Set("Authorization", "Bearer "+h.token)
	}
	if h.session != "" {
		r.Header.Set("Tack-Session", h.session)
	}
	return h.next.RoundTrip(r)
}
