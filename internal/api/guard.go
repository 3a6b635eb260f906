package api

import (
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
)

// guard is the one middleware every request passes through before it is
// routed: the REST routes, the live sockets and the UI alike, and the 404
// and 405 answers too. It holds the rules that protect a Tack on a
// developer's machine from the web pages that machine's browser opens:
//
//   - The Host header must name this server (Options.Hosts). A page on
//     evil.example whose name is rebound to 127.0.0.1 sends Host
//     evil.example, and is refused: DNS rebinding gets nothing to read.
//   - Writes (every method but the safe GET, HEAD and OPTIONS) must not
//     come from another origin: net/http's CrossOriginProtection reads
//     Sec-Fetch-Site, else compares Origin with Host. Clients that are not
//     browsers send neither and pass.
//   - Writes need Content-Type: application/json, which a plain HTML form
//     cannot send and which makes a cross-origin fetch preflight. MCP's
//     DELETE /mcp (a client ending its MCP session) has no body, and no
//     form can send a DELETE: it needs none.
//
// Authentication comes after it, in authenticate (auth.go), on every route
// but the public ones routes.go lists first.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			s.writeError(w, r, errorf(http.StatusForbidden, "forbidden", "Host %q is not one this server answers to; add it with -allowed-hosts or -public-url", r.Host))
			return
		}
		if err := s.crossOrigin.Check(r); err != nil {
			s.writeError(w, r, errorf(http.StatusForbidden, "forbidden", "cross-origin %s refused: Origin %q is not this server's", r.Method, r.Header.Get("Origin")))
			return
		}
		if !safeMethod(r.Method) && !jsonContentTypeOf(r.Header.Get("Content-Type")) && s.routed(r) && !mcpSessionEnd(r) {
			s.writeError(w, r, errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "%s needs Content-Type: application/json", r.Method))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// safeMethod reports whether m only reads: GET, HEAD and OPTIONS, the
// methods CrossOriginProtection lets through. Every other method is a write
// to the guard, to authenticate's scope check and to limitWrites.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// mcpSessionEnd reports whether r is an MCP client ending its session.
func mcpSessionEnd(r *http.Request) bool {
	return r.Method == http.MethodDelete && r.URL.Path == mcpPath
}

func jsonContentTypeOf(v string) bool {
	mt, _, err := mime.ParseMediaType(v)
	return err == nil && mt == "application/json"
}

// routed reports whether a route serves r's method and path; one that none
// does is the router's to answer 404 or 405, whatever its content type.
func (s *Server) routed(r *http.Request) bool {
	return s.routes.Match(chi.NewRouteContext(), r.Method, routePath(r))
}

func routePath(r *http.Request) string {
	if r.URL.RawPath != "" {
		return r.URL.RawPath
	}
	return r.URL.Path
}

// loopbackHosts are the names served when Options.Hosts is empty.
var loopbackHosts = []string{"127.0.0.1", "localhost", "[::1]"}

// hostSet is Options.Hosts, split once: entries with a port, matched
// exactly, and names, matched on any port. All are lower case.
type hostSet struct {
	exact, names map[string]bool
}

func newHostSet(hosts []string) hostSet {
	hs := hostSet{exact: map[string]bool{}, names: map[string]bool{}}
	for _, h := range hosts {
		h = strings.ToLower(h)
		if _, _, err := net.SplitHostPort(h); err == nil {
			hs.exact[h] = true
		} else {
			hs.names[h] = true
		}
	}
	return hs
}

// hostAllowed reports whether host (a Host header) is one of Options.Hosts:
// an entry with a port matches exactly, one without matches any port. Names
// compare case-insensitively; nothing else is normalized, so "localhost."
// or "127.1" are not loopback here.
func (s *Server) hostAllowed(host string) bool {
	host = strings.ToLower(host)
	if s.hosts.exact[host] {
		return true
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
		if strings.Contains(h, ":") {
			name = "[" + h + "]"
		}
	}
	return s.hosts.names[name]
}

// newCrossOrigin builds the CSRF check with the trusted origins.
func newCrossOrigin(trusted []string) (*http.CrossOriginProtection, error) {
	c := http.NewCrossOriginProtection()
	for _, o := range trusted {
		if err := c.AddTrustedOrigin(o); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// methodNotAllowed answers a 405 with the Allow header: the methods the
// router serves on the path, HEAD wherever GET is.
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	path := routePath(r)
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		ok := s.routes.Match(chi.NewRouteContext(), m, path)
		if m == http.MethodHead && !ok {
			ok = s.routes.Match(chi.NewRouteContext(), http.MethodGet, path)
		}
		if ok {
			allow = append(allow, m)
		}
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	s.writeError(w, r, errorf(http.StatusMethodNotAllowed, "method_not_allowed", "%s is not allowed on %s", r.Method, r.URL.Path))
}
