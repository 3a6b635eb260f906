package api_test

import (
	"net/http"
	"testing"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{{name: "Health", run: testHealth}})
}

func testHealth(t *testing.T, b *bundle) {
	b.want(b.do("GET", "/healthz", nil), http.StatusOK, nil)
	b.want(b.do("GET", "/readyz", nil), http.StatusOK, nil)
}
