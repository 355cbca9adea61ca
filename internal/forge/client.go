package forge

import (
	"errors"
	"net/http"
	"sync"
	"time"
)

// ClientOptions configure a forge client: one type for forge/github, forge/gitlab
// and forge/forgejo, whose New functions take it.
type ClientOptions struct {
	Repo  Repo
	Token string
	// Bot is the identity commits are made as (GitLab: empty means the token's user).
	Bot Signature
	// NativeCommits (GitHub) makes commits without naming their author or
	// committer, as Renovate's platform-native commits with an App token: GitHub
	// makes the token's App the author and itself the committer (and signs them).
	// Bot is then the App's bot, whose commits these are.
	NativeCommits bool
	// Transport is the base round tripper (http.DefaultTransport when nil).
	Transport http.RoundTripper
	// Timeout bounds each HTTP request (the forge package's default when zero).
	Timeout time.Duration
}

// ErrNoToken: the options hold no token, and every forge client needs one.
var ErrNoToken = errors.New("no token")

// HTTPClient is the http.Client a forge client sends through: each request is
// authorized (when authorize is not nil) and counted by the returned Transport,
// and bounded by o.Timeout, or defaultTimeout when that is zero. It returns
// ErrNoToken when o has no token.
func HTTPClient(o ClientOptions, defaultTimeout time.Duration, authorize func(*http.Request)) (*http.Client, *Transport, error) {
	if o.Token == "" {
		return nil, nil, ErrNoToken
	}
	base := o.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = defaultTimeout
	}
	tr := &Transport{base: base, authorize: authorize}
	return &http.Client{Transport: tr, Timeout: timeout}, tr, nil
}

// Transport authorizes requests and counts writes. Authorization goes in a header
// set here (or by the forge's library), so no URL, and no error quoting one, ever
// holds the token.
type Transport struct {
	base      http.RoundTripper
	authorize func(*http.Request)

	mu     sync.Mutex
	writes int
}

func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.authorize != nil {
		// A RoundTripper must not modify the caller's request.
		r = r.Clone(r.Context())
		t.authorize(r)
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		t.mu.Lock()
		t.writes++
		t.mu.Unlock()
	}
	return t.base.RoundTrip(r)
}

// Writes counts write requests (any method but GET and HEAD).
func (t *Transport) Writes() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.writes
}
