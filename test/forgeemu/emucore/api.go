package emucore

import (
	"net/http"
	"strings"
)

// Route returns how a forge registers its API below prefix ("/api/v4"): each
// pattern ("GET /projects/{id}") is served at the method and prefix+path,
// through gate, which turns the forge's handler shape (one that takes the
// authenticated user) into an http.HandlerFunc after its auth and fault checks.
func Route[H any](mux *http.ServeMux, prefix string, gate func(H) http.HandlerFunc) func(pattern string, h H) {
	return func(pattern string, h H) {
		method, path, _ := strings.Cut(pattern, " ")
		mux.HandleFunc(method+" "+prefix+path, gate(h))
	}
}

// IsWrite reports whether r may change something: every method but GET and
// HEAD. These are the requests Faults counts and FailWrite aims at.
func IsWrite(r *http.Request) bool {
	return r.Method != http.MethodGet && r.Method != http.MethodHead
}
