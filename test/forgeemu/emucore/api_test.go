package emucore

import (
	"io"
	"net/http"
	"testing"
)

func TestRouteServesBelowThePrefixThroughTheGate(t *testing.T) {
	mux := http.NewServeMux()
	type handler func(w http.ResponseWriter, user string)
	gate := func(h handler) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Token") != "t" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			h(w, "alice")
		}
	}
	api := Route(mux, "/api/v9", gate)
	api("GET /things/{id}", func(w http.ResponseWriter, user string) { _, _ = io.WriteString(w, "thing for "+user) })
	h := Serve(mux)
	t.Cleanup(h.Close)

	do := func(method, path, token string) (int, string) {
		r := call(t, method, h.URL()+path, "Token", token)
		return r.code, r.body
	}
	if code, body := do(http.MethodGet, "/api/v9/things/1", "t"); code != http.StatusOK || body != "thing for alice" {
		t.Fatalf("routed: %d %q", code, body)
	}
	if code, _ := do(http.MethodGet, "/api/v9/things/1", "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("past the gate: %d", code)
	}
	if code, _ := do(http.MethodPost, "/api/v9/things/1", "t"); code != http.StatusMethodNotAllowed {
		t.Fatalf("another method: %d", code)
	}
	if code, _ := do(http.MethodGet, "/things/1", "t"); code != http.StatusNotFound {
		t.Fatalf("without the prefix: %d", code)
	}
}

func TestIsWrite(t *testing.T) {
	for method, want := range map[string]bool{http.MethodGet: false, http.MethodHead: false, http.MethodPost: true,
		http.MethodPut: true, http.MethodPatch: true, http.MethodDelete: true} {
		if got := IsWrite(&http.Request{Method: method}); got != want {
			t.Errorf("%s: %v", method, got)
		}
	}
}
