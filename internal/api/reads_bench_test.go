package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// BenchmarkReadsAtDepth measures the two reads a client makes on opening a
// session, GET /sessions/{id}/todos and the history tail
// (GET /sessions/{id}/history?limit=50, with its snapshot), over real HTTP
// against real Postgres, in a session of 10 events and in one of 1,000,000,
// each in a fresh schema of its own. Both reads are point reads of the
// projection plus, for the tail, an index range scan from the log's end, so
// depth should cost next to nothing.
//
// The two depths are read in alternation within one loop, each request timed
// on its own, so that whatever else loads the machine weighs on both alike;
// each line reports the cost at each depth and their ratio (deep/shallow),
// which docs/performance.md quotes. ns/op is the pair.
//
//	go test ./internal/api/ -run '^$' -bench ReadsAtDepth -benchtime 3000x -count 3
func BenchmarkReadsAtDepth(b *testing.B) {
	depths := [2]int{10, storetest.BenchDepth(b, 1_000_000)}
	var servers [2]*readsServer
	for i, n := range depths {
		servers[i] = newReadsServer(b, n)
	}
	for _, read := range []struct{ name, path string }{
		{"todos", "/todos"},
		{"history-tail", "/history?limit=50"},
		// At 10 events the tail above holds 10 events and at depth 50: this
		// one returns 10 at both, so only the depth differs.
		{"history-tail-10", "/history?limit=10"},
	} {
		b.Run(read.name, func(b *testing.B) {
			var urls [2]string
			for i, srv := range servers {
				urls[i] = srv.url + "/sessions/" + srv.id + read.path
				srv.get(b, urls[i]) // warm the connection and the caches
			}
			var spent [2]time.Duration
			for round := 0; b.Loop(); round++ {
				for k := range 2 {
					i := (round + k) % 2 // alternate which depth goes first
					start := time.Now()
					servers[i].get(b, urls[i])
					spent[i] += time.Since(start)
				}
			}
			shallow := float64(spent[0].Microseconds()) / float64(b.N)
			deep := float64(spent[1].Microseconds()) / float64(b.N)
			b.ReportMetric(shallow, fmt.Sprintf("µs@%devents", depths[0]))
			b.ReportMetric(deep, fmt.Sprintf("µs@%devents", depths[1]))
			b.ReportMetric(deep/shallow, "deep/shallow")
		})
	}
}

// readsServer is the API on a fresh store holding one seeded session.
type readsServer struct {
	url    string
	id     string
	client *http.Client
}

func newReadsServer(b *testing.B, events int) *readsServer {
	st := storetest.Postgres(b, projection.Config{})
	sess := storetest.SeedSession(b, st, events)
	ts := httptest.NewServer(api.New(st, api.Options{}).Handler())
	b.Cleanup(ts.Close)
	srv := &readsServer{url: ts.URL, id: sess.ID, client: ts.Client()}

	// The figure means something only if the tail really is the tail and
	// its snapshot carries the plan written far behind it.
	var tail struct {
		Events   []projection.Event  `json:"events"`
		Snapshot projection.Snapshot `json:"snapshot"`
	}
	if err := json.Unmarshal(srv.get(b, ts.URL+"/sessions/"+sess.ID+"/history?limit=50"), &tail); err != nil {
		b.Fatal(err)
	}
	if len(tail.Events) != min(50, events) || tail.Events[len(tail.Events)-1].Seq != int64(events) ||
		tail.Snapshot.LastSeq != int64(events) || len(tail.Snapshot.Todos) != 5 {
		b.Fatalf("tail of the %d-event session: %d events, snapshot %+v", events, len(tail.Events), tail.Snapshot)
	}
	return srv
}

func (s *readsServer) get(b *testing.B, url string) []byte {
	resp, err := s.client.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %d %s %v", url, resp.StatusCode, body, err)
	}
	return body
}
