package github

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

type appConfig struct {
	id     int64
	slug   string
	key    *rsa.PublicKey
	scopes map[string][]int64 // installation token -> repository IDs it may use
	// notInstalled are the owners whose repositories the App is not installed on.
	notInstalled map[string]bool
}

// RegisterApp installs a GitHub App (on every repository) whose JWTs are signed by
// the private key matching key. Installation tokens it mints authenticate as
// "<slug>[bot]" and, when repository_ids are given, work only on those repositories.
func (s *Server) RegisterApp(id int64, slug string, key *rsa.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.app = &appConfig{id: id, slug: slug, key: key, scopes: map[string][]int64{}, notInstalled: map[string]bool{}}
}

// UninstallApp removes the App's installation from owner's repositories: GitHub
// then answers 404 for their installation.
func (s *Server) UninstallApp(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.app.notInstalled[owner] = true
}

// TokenScope names the repositories ("owner/name", comma-joined) an installation
// token is limited to; "" for an unscoped or unknown token.
func (s *Server) TokenScope(token string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scopeNames(token)
}

// AppBotUser is the identity installation tokens authenticate as.
func AppBotUser(slug string, appID int64) User {
	return User{Login: slug + "[bot]", Name: slug + "[bot]", Email: fmt.Sprintf("%d+%s[bot]@users.noreply.github.com", appID, slug), Type: UserTypeBot}
}

func (s *Server) appRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v3/app", s.appAuthed(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"id": s.app.id, "slug": s.app.slug, "name": s.app.slug})
	}))
	mux.HandleFunc("GET /api/v3/repos/{owner}/{repo}/installation", s.appAuthed(func(w http.ResponseWriter, r *http.Request) {
		if rp := s.repoOf(w, r); rp != nil {
			if s.app.notInstalled[rp.owner] {
				writeError(w, http.StatusNotFound, "Not Found")
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"id": s.installationID(rp.owner), "app_id": s.app.id,
				"account": map[string]any{"login": rp.owner}})
		}
	}))
	mux.HandleFunc("POST /api/v3/app/installations/{id}/access_tokens", s.appAuthed(func(w http.ResponseWriter, r *http.Request) {
		s.faults.CountWrite()
		var in struct {
			RepositoryIDs []int64  `json:"repository_ids"`
			Repositories  []string `json:"repositories"`
		}
		if r.ContentLength != 0 {
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				writeError(w, http.StatusBadRequest, "Problems parsing JSON")
				return
			}
		}
		id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
		var repos []map[string]any
		var scope []int64
		for _, rp := range s.repos {
			if s.installationID(rp.owner) != id {
				continue
			}
			for _, want := range in.RepositoryIDs {
				if want == rp.id {
					scope, repos = append(scope, rp.id), append(repos, s.repoJSON(rp))
				}
			}
			for _, want := range in.Repositories {
				if want == rp.name {
					scope, repos = append(scope, rp.id), append(repos, s.repoJSON(rp))
				}
			}
		}
		if len(scope) != len(in.RepositoryIDs)+len(in.Repositories) {
			unprocessable(w, "There is at least one repository that does not exist or is not accessible to the parent installation.")
			return
		}
		buf := make([]byte, 16)
		_, _ = rand.Read(buf)
		token := "ghs_" + hex.EncodeToString(buf)
		s.tokens.Add(token, AppBotUser(s.app.slug, s.app.id))
		if len(scope) > 0 {
			s.app.scopes[token] = scope
		}
		writeJSON(w, http.StatusCreated, map[string]any{"token": token, "repositories": repos,
			"expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	}))
}

func (s *Server) installationID(owner string) int64 {
	var n int64
	for _, c := range owner {
		n = n*31 + int64(c)
	}
	if n < 0 {
		n = -n
	}
	return n%1_000_000 + 1
}

// appAuthed verifies the App's RS256 JWT, then calls h under s.mu.
func (s *Server) appAuthed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.app == nil {
			writeError(w, http.StatusNotFound, "Not Found")
			return
		}
		raw := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		claims := jwt.RegisteredClaims{}
		_, err := jwt.ParseWithClaims(raw, &claims, func(t *jwt.Token) (any, error) {
			if _, ok := t.Method.(*jwt.SigningMethodRSA); !ok {
				return nil, fmt.Errorf("unexpected signing method")
			}
			return s.app.key, nil
		})
		if err != nil || claims.Issuer != strconv.FormatInt(s.app.id, 10) {
			writeError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
			return
		}
		h(w, r)
	}
}

// scopeAllows reports whether token may act on repository rp. Callers hold s.mu.
func (s *Server) scopeAllows(token string, rp *repo) bool {
	if s.app == nil {
		return true
	}
	scope, scoped := s.app.scopes[token]
	if !scoped {
		return true
	}
	for _, id := range scope {
		if id == rp.id {
			return true
		}
	}
	return false
}
