package github

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// recordRequests keeps "METHOD path" of every request (a GraphQL request as
// "POST /api/graphql <first field of the query>"), for a test that learns what a
// client calls; Requests returns them.
func (s *Server) recordRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		line := r.Method + " " + r.URL.Path
		if r.Method == http.MethodPost && r.URL.Path == "/api/graphql" && r.Body != nil {
			body, err := io.ReadAll(r.Body)
			if err == nil {
				r.Body = io.NopCloser(bytes.NewReader(body))
				line += " " + graphQLShape(body)
			}
		}
		s.requests.Add(line)
		if strings.HasPrefix(r.URL.Path, "/api/") {
			w.Header().Set("X-GitHub-Enterprise-Version", enterpriseVersion)
		}
		h.ServeHTTP(w, r)
	})
}

// maxRecordedRequests bounds the log: a long `nudgeflow dev` session keeps the latest.
const maxRecordedRequests = 10000

var gqlFirstWords = regexp.MustCompile(`[A-Za-z_]+`)

// graphQLShape is "query/mutation name { firstField": enough to tell Renovate's
// queries apart.
func graphQLShape(body []byte) string {
	var req struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(body, &req) != nil {
		return "?"
	}
	q := strings.Join(strings.Fields(req.Query), " ")
	if i := strings.Index(q, "{"); i >= 0 {
		head := strings.TrimSpace(q[:i])
		rest := q[i+1:]
		if f := gqlFirstWords.FindString(rest); f != "" {
			if head == "" {
				head = "query"
			}
			return head + " { " + f
		}
	}
	return "?"
}

// Requests lists "METHOD path" of every request so far, in order.
func (s *Server) Requests() []string {
	return s.requests.All()
}
