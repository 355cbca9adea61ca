// Package faultproxy is a reverse proxy in front of a real Forgejo or Gitea server
// that injects the failures tests need and the server never produces on its own.
// Gitea and Forgejo have no API rate limiter (Gitea v1.26's routers and services
// never answer 429): on a real deployment a 429 comes from the proxy in front, with
// Retry-After. Lost answers and races with a person's push are timed here too.
// The pull request activity tests and the change group tests share it.
package faultproxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Proxy forwards every request to the server unless a failure is due.
type Proxy struct {
	// URL is the proxy's address; clients given it reach the server through it.
	URL string

	root string
	srv  *httptest.Server
	rp   *httputil.ReverseProxy

	mu          sync.Mutex
	writes      int
	requests    []string
	fails       []fault
	failWriteAt int
	failStatus  int
	failApplied bool
	hook        *requestHook
}

// fault is one injected answer, for API requests about owner's repositories, or
// any API request when owner is empty.
type fault struct {
	owner              string
	status, retryAfter int
}

// requestHook runs fn before the nth request that match accepts is forwarded.
type requestHook struct {
	nth   int
	match func(*http.Request) bool
	fn    func()
}

// New starts a proxy in front of the server at target; Close stops it.
func New(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("fault proxy target %q: %w", target, err)
	}
	p := &Proxy{root: target, rp: httputil.NewSingleHostReverseProxy(u)}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.srv.URL
	return p, nil
}

// Close stops the proxy.
func (p *Proxy) Close() { p.srv.Close() }

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	if f, ok := p.take(r.URL.Path); ok {
		// What a front proxy's rate limiter sends: Retry-After and the
		// GitHub-compatible X-RateLimit-Remaining, with Gitea's own error body
		// ({"message", "url"}) and content type.
		if f.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(f.retryAfter))
			w.Header().Set("X-RateLimit-Remaining", "0")
		}
		w.Header().Set("Content-Type", "application/json;charset=utf-8")
		w.WriteHeader(f.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": http.StatusText(f.status), "url": p.root + "/api/swagger"})
		return
	}
	write := r.Method != http.MethodGet && r.Method != http.MethodHead
	var failNow, applied bool
	var status int
	var before func()
	p.mu.Lock()
	p.requests = append(p.requests, r.Method+" "+r.URL.Path)
	if write {
		p.writes++
		if p.failWriteAt > 0 && p.writes == p.failWriteAt {
			failNow, status, applied = true, p.failStatus, p.failApplied
			p.failWriteAt = 0
		}
	}
	if h := p.hook; h != nil && h.match(r) {
		if h.nth--; h.nth == 0 {
			before, p.hook = h.fn, nil
		}
	}
	p.mu.Unlock()
	// The hook runs unlocked: it may act on the server, even through the proxy.
	if before != nil {
		before()
	}
	if failNow {
		if applied {
			p.rp.ServeHTTP(httptest.NewRecorder(), r) // the server applies it; the answer is lost
		}
		w.WriteHeader(status)
		return
	}
	p.rp.ServeHTTP(w, r)
}

// take consumes the first failure due for an API request to path.
func (p *Proxy) take(path string) (fault, bool) {
	if !strings.HasPrefix(path, "/api/") {
		return fault{}, false
	}
	var owner string
	if rest, ok := strings.CutPrefix(path, "/api/v1/repos/"); ok {
		owner, _, _ = strings.Cut(rest, "/")
		owner = strings.ToLower(owner)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, f := range p.fails {
		if f.owner == "" || f.owner == owner {
			p.fails = append(p.fails[:i], p.fails[i+1:]...)
			return f, true
		}
	}
	return fault{}, false
}

// FailNext fails the next n API requests with status (and Retry-After seconds
// when retryAfter > 0).
func (p *Proxy) FailNext(n, status, retryAfter int) { p.FailNextFor("", n, status, retryAfter) }

// FailNextFor fails the next n API requests about owner's repositories (any API
// request when owner is empty), so a test touches only its own repositories while
// other tests' workflows keep polling theirs.
func (p *Proxy) FailNextFor(owner string, n, status, retryAfter int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range n {
		p.fails = append(p.fails, fault{owner: strings.ToLower(owner), status: status, retryAfter: retryAfter})
	}
}

// ClearFailuresFor drops the failures still due for owner's repositories (every
// owner's when owner is empty): the outage ends.
func (p *Proxy) ClearFailuresFor(owner string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	owner = strings.ToLower(owner)
	kept := p.fails[:0]
	for _, f := range p.fails {
		if owner != "" && f.owner != owner {
			kept = append(kept, f)
		}
	}
	p.fails = kept
}

// FailWrite lets `after` more writes through, then fails the next one with status;
// with applied, the server still receives and applies it (a lost answer).
func (p *Proxy) FailWrite(after, status int, applied bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failWriteAt, p.failStatus, p.failApplied = p.writes+after+1, status, applied
}

// BeforeRequest runs fn once, before the nth request that match accepts is forwarded.
func (p *Proxy) BeforeRequest(nth int, match func(*http.Request) bool, fn func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hook = &requestHook{nth: nth, match: match, fn: fn}
}

// Requests are the requests that reached the proxy so far ("METHOD /path"),
// injected failures of FailNext aside.
func (p *Proxy) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requests)
}

// Writes counts the write requests that reached the proxy (injected failures of
// FailNext aside).
func (p *Proxy) Writes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writes
}
