package faultproxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nudgeflow/nudgeflow/test/forgeemu/faultproxy"
)

func TestProxyInjectsFailuresWhereAsked(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	p, err := faultproxy.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	do := func(method, path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, p.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp
	}

	// Scoped to an owner (case-insensitive): other owners' requests pass.
	p.FailNextFor("Acme", 1, http.StatusTooManyRequests, 3)
	if r := do(http.MethodGet, "/api/v1/repos/other/x"); r.StatusCode != http.StatusOK {
		t.Fatalf("another owner: %d", r.StatusCode)
	}
	r := do(http.MethodGet, "/api/v1/repos/acme/x/branches")
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "3" || r.Header.Get("X-RateLimit-Remaining") != "0" ||
		!strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("owner's request: %d %v", r.StatusCode, r.Header)
	}
	if r := do(http.MethodGet, "/api/v1/repos/acme/x"); r.StatusCode != http.StatusOK {
		t.Fatalf("after the failure: %d", r.StatusCode)
	}

	// Unscoped: any API request, never a web page; no Retry-After without a delay.
	p.FailNext(1, http.StatusBadGateway, 0)
	if r := do(http.MethodGet, "/acme/x/pulls/1"); r.StatusCode != http.StatusOK {
		t.Fatalf("web page: %d", r.StatusCode)
	}
	if r := do(http.MethodGet, "/api/v1/user"); r.StatusCode != http.StatusBadGateway || r.Header.Get("Retry-After") != "" {
		t.Fatalf("any API request: %d %v", r.StatusCode, r.Header)
	}

	// A lost answer: the second write reaches the server, its caller sees 502.
	before := served.Load()
	p.FailWrite(1, http.StatusBadGateway, true)
	if r := do(http.MethodPost, "/api/v1/repos/acme/x/pulls"); r.StatusCode != http.StatusOK {
		t.Fatalf("first write: %d", r.StatusCode)
	}
	if r := do(http.MethodPatch, "/api/v1/repos/acme/x/pulls/1"); r.StatusCode != http.StatusBadGateway || served.Load() != before+2 {
		t.Fatalf("lost answer: %d, served %d", r.StatusCode, served.Load()-before)
	}
	if p.Writes() != 2 {
		t.Fatalf("writes %d", p.Writes())
	}

	// The hook runs once, before the nth matching request.
	var ran int
	p.BeforeRequest(2, func(r *http.Request) bool { return r.Method == http.MethodGet }, func() { ran++ })
	for range 3 {
		do(http.MethodGet, "/api/v1/repos/acme/x")
	}
	if ran != 1 {
		t.Fatalf("hook ran %d times", ran)
	}
}
