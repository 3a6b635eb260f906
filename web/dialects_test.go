package web_test

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/web"
)

// listToolsIn is the JSON of the list tools a served page carries.
var listToolsIn = regexp.MustCompile(`<script type="application/json" id="tack-list-tools">([^<]*)</script>`)

// TestPagesCarryListTools: the browser draws a call of every list tool the
// server takes as a list write as one (projection.Dialects, which the
// agents register; Tack's own todo_write tools.js knows), reading its
// arguments by the tool's shape. The page of the session list and of a
// session carries the registered tools and their shapes, which tools.js
// reads, and tools.js names none of them itself: a new agent's tool
// needs no line of the UI's.
func TestPagesCarryListTools(t *testing.T) {
	t.Parallel()
	want := projection.Dialects()
	if len(want) < 2 {
		t.Fatalf("the dialects registered: %v", want)
	}
	srv := httptest.NewServer(web.Handler())
	t.Cleanup(srv.Close)
	for _, page := range []string{"/", "/s/ses_1"} {
		resp, err := srv.Client().Get(srv.URL + page)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := listToolsIn.FindSubmatch(body)
		if m == nil {
			t.Errorf("%s carries no list tools", page)
			continue
		}
		var got []projection.Dialect
		if err := json.Unmarshal(m[1], &got); err != nil {
			t.Errorf("%s: its list tools %s: %v", page, m[1], err)
			continue
		}
		// What the page carries of each: its name, list and item keys,
		// and its spellings of a status.
		for i := range want {
			want[i].Dropped, want[i].Kept = nil, nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s carries the list tools %s; the server's are %+v", page, m[1], want)
		}
	}

	src, err := os.ReadFile("static/tools.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range want {
		if regexp.MustCompile(`['"` + "`" + `]` + regexp.QuoteMeta(d.Tool) + `['"` + "`" + `]`).Match(src) {
			t.Errorf("tools.js names %s, which the page tells it of", d.Tool)
		}
	}
}
