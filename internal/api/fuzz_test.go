package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// fuzzRoutes are the requests FuzzRequest sends: each takes the fuzzed
// query and body. {id} is a session with an open turn.
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/sessions"},
	{"POST", "/sessions/{id}/events"},
	{"POST", "/sessions/{id}/tools/todo_write"},
	{"POST", "/sessions/{id}/tools/todo_read"},
	{"GET", "/sessions"},
	{"GET", "/sessions/{id}/events"},
	{"GET", "/sessions/{id}/history"},
	{"GET", "/sessions/{id}/todos"},
}

// FuzzRequest sends fuzzed bodies and query strings through the real router
// over a real store (SQLite, for speed): no request panics or answers 5xx,
// every error is the JSON error shape or a rejected tool call, and a
// rejected request writes nothing.
func FuzzRequest(f *testing.F) {
	st := storetest.SQLite(f, projection.Config{})
	h := api.New(st, api.Options{}).Handler()
	ctx := context.Background()
	sess, _, err := st.CreateSession(ctx, store.NewSession{Title: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	id := sess.ID
	if rec := serve(h, "POST", "/sessions/"+id+"/events", "", `{"events":[{"type":"turn/start","data":{}}]}`, ""); rec.Code != http.StatusCreated {
		f.Fatalf("turn/start = %d %s", rec.Code, rec.Body)
	}
	f.Fuzz(func(t *testing.T, route uint8, query string, body []byte, idemKey string) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		before, err := st.Session(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		newest, _, err := st.Sessions(ctx, 1, "")
		if err != nil {
			t.Fatal(err)
		}
		rec := serve(h, rt.method, strings.ReplaceAll(rt.path, "{id}", id), query, string(body), idemKey)
		if rec.Code >= 500 {
			t.Fatalf("%s %s?%s %q = %d %s", rt.method, rt.path, query, body, rec.Code, rec.Body)
		}
		if rec.Code < 400 {
			return
		}
		var shape struct {
			Error *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
			IsError bool   `json:"isError"`
			Content string `json:"content"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &shape); err != nil {
			t.Fatalf("%d with a body that is not JSON: %q", rec.Code, rec.Body)
		}
		tool := strings.Contains(rt.path, "/tools/")
		switch {
		case shape.Error != nil && shape.Error.Code != "" && shape.Error.Message != "":
		case tool && shape.IsError && strings.HasPrefix(shape.Content, "Error: "):
		default:
			t.Fatalf("%d without the error shape: %s", rec.Code, rec.Body)
		}
		after, err := st.Session(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		newestAfter, _, err := st.Sessions(ctx, 1, "")
		if err != nil {
			t.Fatal(err)
		}
		if after.LastSeq != before.LastSeq || len(newestAfter) != len(newest) || newestAfter[0].ID != newest[0].ID {
			t.Fatalf("a rejected %s %s (%d %s) wrote: lastSeq %d → %d, newest session %s → %s",
				rt.method, rt.path, rec.Code, rec.Body, before.LastSeq, after.LastSeq, newest[0].ID, newestAfter[0].ID)
		}
	})
}

func serve(h http.Handler, method, path, query, body, idemKey string) *httptest.ResponseRecorder {
	target := path
	if query != "" {
		target += "?" + query
	}
	req := httptest.NewRequest(method, "http://127.0.0.1"+"/", bytes.NewReader([]byte(body)))
	// The fuzzed query may hold anything; set it raw rather than parse it.
	req.URL.Path, req.URL.RawQuery = path, query
	req.RequestURI = target
	req.Header.Set("Content-Type", "application/json")
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
