package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// BenchmarkTodoHistoryAtDepth measures the first page of the list's history
// (GET /sessions/{id}/todos/history?limit=10: ten versions at both depths,
// so only the depth differs) and the reminder
// (GET /sessions/{id}/todos/reminder) over real HTTP against real Postgres,
// in a session of 10 list writes and in one of 100,000, each in a fresh
// schema, read in alternation as BenchmarkReadsAtDepth does; each line
// reports µs per read at each depth and their ratio (deep/shallow).
//
//	go test ./internal/api/ -run '^$' -bench TodoHistoryAtDepth -benchtime 2000x -count 3
func BenchmarkTodoHistoryAtDepth(b *testing.B) {
	depths := [2]int{10, storetest.BenchDepth(b, 100_000)}
	var servers [2]*readsServer
	for i, n := range depths {
		st := storetest.Postgres(b, projection.Config{})
		sess := storetest.SeedListWrites(b, st, n)
		ts := httptest.NewServer(api.New(st, api.Options{}).Handler())
		b.Cleanup(ts.Close)
		servers[i] = &readsServer{url: ts.URL, id: sess.ID, client: ts.Client()}
		var page struct {
			Versions []projection.Version `json:"versions"`
			HasMore  bool                 `json:"hasMore"`
		}
		if err := json.Unmarshal(servers[i].get(b, ts.URL+"/sessions/"+sess.ID+"/todos/history?limit=10"), &page); err != nil {
			b.Fatal(err)
		}
		if len(page.Versions) != 10 || page.Versions[0].Version != int64(n+1) || page.HasMore != (n > 10) {
			b.Fatalf("first page of %d writes: %d versions from %d", n, len(page.Versions), page.Versions[0].Version)
		}
	}
	for _, read := range []struct{ name, path string }{
		{"history-first-page", "/todos/history?limit=10"},
		{"reminder", "/todos/reminder"},
	} {
		b.Run(read.name, func(b *testing.B) {
			var urls [2]string
			for i, srv := range servers {
				urls[i] = srv.url + "/sessions/" + srv.id + read.path
				srv.get(b, urls[i])
			}
			var spent [2]time.Duration
			for round := 0; b.Loop(); round++ {
				for k := range 2 {
					i := (round + k) % 2
					start := time.Now()
					servers[i].get(b, urls[i])
					spent[i] += time.Since(start)
				}
			}
			shallow := float64(spent[0].Microseconds()) / float64(b.N)
			deep := float64(spent[1].Microseconds()) / float64(b.N)
			b.ReportMetric(shallow, fmt.Sprintf("µs@%dwrites", depths[0]))
			b.ReportMetric(deep, fmt.Sprintf("µs@%dwrites", depths[1]))
			b.ReportMetric(deep/shallow, "deep/shallow")
		})
	}
}

// BenchmarkEditVsTodoWrite measures a person's edit (PUT /sessions/{id}/todos)
// beside the model's todo_write, one client over real HTTP against real
// Postgres, each writing a list that differs from the last, in alternation
// so both share the machine's load; it reports each one's calls per second.
//
//	go test ./internal/api/ -run '^$' -bench EditVsTodoWrite -benchtime 2000x -count 3
func BenchmarkEditVsTodoWrite(b *testing.B) {
	st := storetest.Postgres(b, projection.Config{})
	ts := httptest.NewServer(api.New(st, api.Options{}).Handler())
	b.Cleanup(ts.Close)
	client := ts.Client()
	post := func(method, path, body string) []byte {
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Version int64 `json:"version"`
		}
		raw := make([]byte, 0, 4096)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			raw = append(raw, buf[:n]...)
			if err != nil {
				break
			}
		}
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
			b.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
		_ = json.Unmarshal(raw, &out)
		return raw
	}
	var sess struct{ ID string }
	_ = json.Unmarshal(post("POST", "/sessions", `{}`), &sess)
	post("POST", "/sessions/"+sess.ID+"/events", `{"events":[{"type":"turn/start"}]}`)
	list := func(i int) string {
		return fmt.Sprintf(`[{"content":"step %d","status":"in_progress"},{"content":"next","status":"pending"}]`, i)
	}
	var (
		spent   [2]time.Duration
		version int64
	)
	for i := 0; b.Loop(); i++ {
		// The model reads after each edit, as a harness that is told would.
		start := time.Now()
		var td struct{ Version int64 }
		_ = json.Unmarshal(post("PUT", "/sessions/"+sess.ID+"/todos", fmt.Sprintf(`{"todos":%s,"baseVersion":%d}`, list(2*i), version)), &td)
		spent[0] += time.Since(start)
		post("POST", "/sessions/"+sess.ID+"/tools/todo_read", `{}`)
		start = time.Now()
		var a struct{ Version int64 }
		_ = json.Unmarshal(post("POST", "/sessions/"+sess.ID+"/tools/todo_write", `{"todos":`+list(2*i+1)+`}`), &a)
		spent[1] += time.Since(start)
		version = a.Version
	}
	edit := float64(b.N) / spent[0].Seconds()
	write := float64(b.N) / spent[1].Seconds()
	b.ReportMetric(edit, "edits/s")
	b.ReportMetric(write, "todo_writes/s")
	b.ReportMetric(edit/write, "edit/write")
}
