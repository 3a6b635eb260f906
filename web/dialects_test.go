package web_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
)

// TestTodoToolsMatchDialects: the browser draws a call of every list tool
// the server takes as a list write (projection.Dialects, which the agents register, and Tack's own
// todo_write) as one, and no other. tools.js keeps its table rather than
// asking the server: the page draws a conversation with no request more,
// and this test names the line a new dialect needs there.
func TestTodoToolsMatchDialects(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("static/tools.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`export const TODO_TOOLS = new Set\(\[([^\]]*)\]\)`).FindSubmatch(src)
	if m == nil {
		t.Fatal("tools.js declares no TODO_TOOLS")
	}
	var browser []string
	for _, q := range regexp.MustCompile(`'([^']*)'`).FindAllSubmatch(m[1], -1) {
		browser = append(browser, string(q[1]))
	}
	server := []string{"todo_write"}
	for _, d := range projection.Dialects() {
		server = append(server, d.Tool)
	}
	slices.Sort(browser)
	slices.Sort(server)
	if !slices.Equal(browser, server) {
		t.Errorf("tools.js's TODO_TOOLS are %s; the server's list tools are %s", strings.Join(browser, ", "), strings.Join(server, ", "))
	}
}
