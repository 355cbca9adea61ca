// Package emucore is what every forge emulator has regardless of the API it speaks:
// the HTTP server's lifecycle and request log (HTTP, Log), the API's front door
// (Route, IsWrite), token authentication (Tokens), fault injection and traffic
// counters (Faults, OneShot, Counter), the CI runs Pipelines as Code would have
// started (CI), webhook delivery (Webhooks), the saved-state file (Saved, Save,
// Load) and git over smart HTTP (Git).
//
// The GitHub and GitLab emulators (packages github and gitlab beside it) each hold
// these parts and keep everything forge-shaped themselves: routes, JSON shapes,
// how a token is read from a request, how a failure or a webhook looks on the wire
// (headers, signatures, payloads), what the saved file holds. The parts here
// decide nothing about that; they keep state and order.
//
// Every type is safe for concurrent use; each has its own lock, so an emulator may
// call it while holding its own (the emulator's lock first, never the other way
// round: nothing here calls back into the emulator while locked).
package emucore

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// HTTP is an emulator's HTTP server on 127.0.0.1.
type HTTP struct {
	srv *httptest.Server
}

// Serve serves h on a free port of 127.0.0.1.
func Serve(h http.Handler) *HTTP {
	return &HTTP{srv: httptest.NewServer(h)}
}

// ServeAt serves h on addr (host:port), for `nudgeflow dev`'s fixed, documented
// ports. It fails when the address is taken; forge names the emulator in the
// error ("GitHub emulator").
func ServeAt(forge, addr string, h http.Handler) (*HTTP, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: listening on %s: %w", forge, addr, err)
	}
	srv := httptest.NewUnstartedServer(h)
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	return &HTTP{srv: srv}, nil
}

// URL is the server's base URL (http://127.0.0.1:port).
func (h *HTTP) URL() string { return h.srv.URL }

// Host is host:port of the server.
func (h *HTTP) Host() string { return strings.TrimPrefix(h.srv.URL, "http://") }

// Close stops the server, waiting for the requests in flight.
func (h *HTTP) Close() { h.srv.Close() }

// Log is a bounded, ordered record of what an emulator was asked (a request
// line, a matched route): how a test learns what a client calls. Past max
// entries the oldest half is dropped, so a long `nudgeflow dev` session keeps
// the latest.
type Log[T any] struct {
	mu      sync.Mutex
	max     int
	entries []T
}

// NewLog keeps at most max entries.
func NewLog[T any](max int) *Log[T] { return &Log[T]{max: max} }

// Add appends e.
func (l *Log[T]) Add(e T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.entries) >= l.max {
		l.entries = append(l.entries[:0], l.entries[l.max/2:]...)
	}
	l.entries = append(l.entries, e)
}

// All returns a copy of the entries, oldest first.
func (l *Log[T]) All() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]T(nil), l.entries...)
}
