package gitlab

import (
	"net/http"
	"strings"
)

// Call is one request the emulator answered, by route: the API pattern it matched
// ("GET /api/v4/projects/{id}") or, for a path no route knows, the path itself.
// The calls a client made are how the package comment's list of what Renovate's
// gitlab platform calls was recorded, and how a test shows it.
type Call struct {
	Method string
	Route  string
	Status int
}

// maxCalls bounds the log for a long-running `nudgeflow dev`: past it the oldest
// half is dropped.
const maxCalls = 10000

// Calls lists the requests answered so far (at most the last maxCalls), in order.
func (s *Server) Calls() []Call {
	return s.calls.All()
}

// recordCalls wraps the routes so every request is logged with the route it
// matched and the status it got (emucore.Log has its own lock: handlers hold s.mu
// while they answer, and git transfers stream outside it).
func (s *Server) recordCalls(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		route := r.Pattern
		if _, p, ok := strings.Cut(route, " "); ok {
			route = p
		}
		if route == "" || route == "/api/v4/" || route == "/{path...}" {
			route = r.URL.Path
		}
		s.calls.Add(Call{Method: r.Method, Route: route, Status: rec.status})
	})
}

// statusRecorder remembers the status written; Unwrap lets http.ResponseController
// reach the connection's Flush for streamed git responses.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
