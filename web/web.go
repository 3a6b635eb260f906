// Package web serves Tack's browser UI: one HTML page and a handful of ES
// modules and CSS, embedded in the binary. There is no build step; what is in
// static/ is what the browser runs.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/tack-dev/tack/internal/projection"
)

//go:embed static
var files embed.FS

// version names this build's assets. Asset URLs carry it
// (/static/<version>/app.js), so browsers may cache them forever and a new
// build is fetched anew. Relative imports between modules keep the prefix.
var version = func() string {
	h := sha256.New()
	_ = fs.WalkDir(files, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := files.ReadFile(p)
		h.Write([]byte(p))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}()

// csp lets the page load nothing from anywhere but Tack itself. The page's
// own host is named for websockets too: not every browser lets 'self' cover
// ws: and wss:.
func csp(host string) string {
	connect := "'self'"
	if validHost.MatchString(host) {
		connect += " ws://" + host + " wss://" + host
	}
	return "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src " + connect + "; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

var validHost = regexp.MustCompile(`^[A-Za-z0-9.\-]+(:[0-9]+)?$|^\[[0-9A-Fa-f:.]+\](:[0-9]+)?$`)

// Handler serves the UI: "/" (the session list), "/s/{id}" (a session),
// "/login" (the sign-in page), "/settings" and "/static/...". The first two are the same
// document; app.js picks the view from the path, so a link to a session
// survives a reload. It is built once the agents are registered (the init
// of internal/transcript, which every binary serving a store links): the
// document carries their list tools (listTools).
func Handler() http.Handler {
	mux := http.NewServeMux()
	serve := func(name string) http.HandlerFunc {
		doc, err := files.ReadFile("static/" + name)
		if err != nil {
			panic(err)
		}
		doc = bytes.Replace(doc, []byte("</head>"), append(modulePreloads(doc), "</head>"...), 1)
		doc = bytes.ReplaceAll(doc, []byte("{{static}}"), []byte("/static/"+version))
		doc = bytes.ReplaceAll(doc, []byte("{{listTools}}"), listTools())
		return func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Cache-Control", "no-cache")
			h.Set("Content-Security-Policy", csp(r.Host))
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Referrer-Policy", "same-origin")
			_, _ = w.Write(doc)
		}
	}
	index := serve("index.html")
	mux.HandleFunc("GET /{$}", index)
	mux.HandleFunc("GET /s/{id}", index)
	// The sign-in page; its one-time link code stays after '#', in the browser.
	mux.HandleFunc("GET /login", serve("login.html"))
	// One's tokens and sign-ins, and for an admin the principals.
	mux.HandleFunc("GET /settings", serve("settings.html"))
	mux.HandleFunc("GET /static/{version}/{file...}", serveAsset)
	return mux
}

// listTools are the agents' own list tools and their shapes, as the agents
// registered them (projection.Dialects): tools.js reads a call of any of
// them as a list, so that a new agent's tool is drawn as one with no line
// of the UI's. They go in the page (#tack-list-tools), which the UI has
// before its modules run, rather than in an answer it would wait for.
// encoding/json escapes <, > and &, so no name ends the script element.
func listTools() []byte {
	b, err := json.Marshal(projection.Dialects())
	if err != nil {
		panic(err)
	}
	return b
}

var (
	entryModule  = regexp.MustCompile(`<script type="module" src="\{\{static\}\}/([^"]+)">`)
	staticImport = regexp.MustCompile(`(?m)^\s*(?:import|export)\b[^'";]*?(?:from\s+)?['"](\./[^'"]+|\.\./[^'"]+)['"]`)
)

// modulePreloads is a <link rel="modulepreload"> for every module a page's
// entry modules import, directly or not, by static imports. Without them
// the browser learns of a module only once the one importing it has
// arrived and been parsed: a waterfall as deep as the import graph (six
// round trips before the board's first rows), where preloads ask for the
// whole graph at once.
func modulePreloads(doc []byte) []byte {
	seen := map[string]bool{}
	var order []string
	var walk func(name string)
	walk = func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		order = append(order, name)
		src, err := files.ReadFile("static/" + name)
		if err != nil {
			return
		}
		for _, m := range staticImport.FindAllSubmatch(src, -1) {
			walk(path.Join(path.Dir(name), string(m[1])))
		}
	}
	entries := map[string]bool{}
	for _, m := range entryModule.FindAllSubmatch(doc, -1) {
		entries[string(m[1])] = true
		walk(string(m[1]))
	}
	var b bytes.Buffer
	for _, name := range order {
		if !entries[name] {
			b.WriteString(`<link rel="modulepreload" href="{{static}}/` + name + "\">\n")
		}
	}
	return b.Bytes()
}

// serveAsset answers one embedded file. Under the current version it is
// immutable; under another (a page loaded before an upgrade) it is served
// but revalidated, so nobody caches the new file under the old name.
func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	if strings.HasSuffix(name, ".html") || strings.Contains(name, "..") {
		http.NotFound(w, r)
		return
	}
	b, err := files.ReadFile("static/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		h.Set("Content-Type", ct)
	}
	h.Set("X-Content-Type-Options", "nosniff")
	if r.PathValue("version") == version {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}
