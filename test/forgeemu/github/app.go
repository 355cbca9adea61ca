package github

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

// An installation token, as GitHub documents it ("Generating an installation
// access token for a GitHub App", the REST reference of POST
// /app/installations/{id}/access_tokens, "Troubleshooting the REST API"):
//   - it works on the repositories it was minted for (repositories or
//     repository_ids), or on every repository of the installation when none were
//     named; another repository answers 404 Not Found, as GitHub hides what a
//     token may not see;
//   - it has the permissions it was minted with, or all of the App's when none
//     were named; asking for one the installation was not granted answers 422;
//     a request its permissions do not cover answers 403 "Resource not accessible
//     by integration" (GraphQL: a FORBIDDEN error);
//   - it expires an hour after it was minted (TokenLifetime here); an expired
//     token answers 401 "Bad credentials".
type appConfig struct {
	id   int64
	slug string
	key  *rsa.PublicKey
	// permissions are what the installation was granted (name -> read|write).
	permissions map[string]string
	// tokens are the installation tokens minted.
	tokens map[string]*installToken
	// notInstalled are the owners whose repositories the App is not installed on.
	notInstalled map[string]bool
	// mints are the token requests answered, in order.
	mints []TokenMint
	// lifetime is how long a minted token lives.
	lifetime time.Duration
}

type installToken struct {
	installation int64
	// repos are the repository IDs it is limited to; nil: the installation's.
	repos       []int64
	permissions map[string]string
	expires     time.Time
}

// TokenMint is one installation token GitHub minted: for which repositories
// ("owner/name"; none: the whole installation) and with which permissions
// (name -> level; none asked: the App's).
type TokenMint struct {
	Installation int64
	Repositories []string
	Permissions  map[string]string
}

// DefaultAppPermissions are what an App registered here was granted: a Konflux
// GitHub App's repository permissions (build-service's documentation asks for
// these and more).
var DefaultAppPermissions = map[string]string{
	"metadata": "read", "contents": "write", "pull_requests": "write", "checks": "write", "statuses": "write",
	"issues": "write", "workflows": "write", "administration": "read",
}

// DefaultTokenLifetime is how long GitHub's installation tokens live.
const DefaultTokenLifetime = time.Hour

// RegisterApp installs a GitHub App (on every repository) whose JWTs are signed by
// the private key matching key, granted DefaultAppPermissions. Installation tokens
// it mints authenticate as "<slug>[bot]".
func (s *Server) RegisterApp(id int64, slug string, key *rsa.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.app = &appConfig{id: id, slug: slug, key: key, permissions: maps.Clone(DefaultAppPermissions),
		tokens: map[string]*installToken{}, notInstalled: map[string]bool{}, lifetime: DefaultTokenLifetime}
}

// LimitToken makes token (added with AddToken, authenticating as its user) an
// installation token limited to repos ("owner/name") and permissions, as one the
// App minted would be: for a test that runs a client with a fixed token under
// GitHub's rules for installation tokens.
func (s *Server) LimitToken(token string, repos []string, permissions map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.app == nil {
		s.app = &appConfig{permissions: maps.Clone(DefaultAppPermissions), tokens: map[string]*installToken{},
			notInstalled: map[string]bool{}, lifetime: DefaultTokenLifetime}
	}
	t := &installToken{repos: []int64{}, permissions: maps.Clone(permissions), expires: time.Now().Add(100 * 365 * 24 * time.Hour)}
	t.permissions["metadata"] = "read"
	for _, name := range repos {
		if rp := s.repos[name]; rp != nil {
			t.repos = append(t.repos, rp.id)
			t.installation = s.installationID(rp.owner)
		}
	}
	s.app.tokens[token] = t
}

// SetAppPermissions replaces what the App's installations were granted.
func (s *Server) SetAppPermissions(p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.app.permissions = maps.Clone(p)
}

// SetTokenLifetime makes the tokens minted from now on live d.
func (s *Server) SetTokenLifetime(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.app.lifetime = d
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

// TokenPermissions are an installation token's permissions (nil for a token that
// is not one).
func (s *Server) TokenPermissions(token string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.installToken(token); t != nil {
		return maps.Clone(t.permissions)
	}
	return nil
}

// TokenMints lists the installation tokens minted so far.
func (s *Server) TokenMints() []TokenMint {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.app == nil {
		return nil
	}
	return slices.Clone(s.app.mints)
}

// AppBotUser is the identity installation tokens of the App appID authenticate as
// on the server at host (host:port): its bot user "<slug>[bot]", an account of its
// own whose id is not the App's, and that user's noreply address, as GitHub
// attributes a commit made with an installation token:
// "<bot user id>+<slug>[bot]@users.noreply.<host name>".
func AppBotUser(slug string, appID int64, host string) User {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	id := AppBotUserID(appID)
	return User{Login: slug + "[bot]", Name: slug + "[bot]", ID: id,
		Email: fmt.Sprintf("%d+%s[bot]@users.noreply.%s", id, slug, host), Type: UserTypeBot}
}

// AppBotUserID is the user id of the App appID's bot user. GitHub gives the bot
// user an id of its own (dependabot: App 29110, user 49699333); the emulator's is
// the App id plus 41000000, so that a client that confuses the two is seen.
func AppBotUserID(appID int64) int64 { return 41_000_000 + appID }

// AppBotUser is the identity this server's App's installation tokens authenticate as.
func (s *Server) AppBotUser() User {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.app == nil {
		return User{}
	}
	return AppBotUser(s.app.slug, s.app.id, s.Host())
}

// getUser answers GET /users/{login}: the App's bot user, or a user some token
// authenticates as. Bots have no public email.
func (s *Server) getUser(w http.ResponseWriter, r *http.Request, _ User) {
	login := r.PathValue("login")
	u, ok := s.tokens.Find(func(u User) bool { return u.Login == login })
	if s.app != nil && s.app.slug != "" && login == s.app.slug+"[bot]" {
		u, ok = AppBotUser(s.app.slug, s.app.id, s.Host()), true
	}
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	typ := u.Type
	if typ == "" {
		typ = "User"
	}
	out := map[string]any{"login": u.Login, "id": userID(u), "type": typ, "name": u.Name, "email": u.Email}
	if typ == UserTypeBot {
		out["email"] = nil
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) appRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v3/app", s.appAuthed(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"id": s.app.id, "slug": s.app.slug, "name": s.app.slug})
	}))
	mux.HandleFunc("GET /api/v3/repos/{owner}/{repo}/installation", s.appAuthed(func(w http.ResponseWriter, r *http.Request) {
		rp := s.repos[r.PathValue("owner")+"/"+r.PathValue("repo")]
		if rp == nil || s.app.notInstalled[rp.owner] {
			writeError(w, http.StatusNotFound, "Not Found")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": s.installationID(rp.owner), "app_id": s.app.id,
			"account": map[string]any{"login": rp.owner}, "permissions": s.app.permissions})
	}))
	mux.HandleFunc("POST /api/v3/app/installations/{id}/access_tokens", s.appAuthed(s.mintToken))
	// An installation token revokes itself (DELETE /installation/token).
	mux.HandleFunc("DELETE /api/v3/installation/token", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		token := bearer(r)
		if s.installToken(token) == nil {
			writeError(w, http.StatusUnauthorized, "Bad credentials")
			return
		}
		delete(s.app.tokens, token)
		s.tokens.Revoke(token)
		w.WriteHeader(http.StatusNoContent)
	})
}

// mintToken answers POST /app/installations/{id}/access_tokens. Callers hold s.mu.
func (s *Server) mintToken(w http.ResponseWriter, r *http.Request) {
	s.faults.CountWrite()
	var in struct {
		RepositoryIDs []int64           `json:"repository_ids"`
		Repositories  []string          `json:"repositories"`
		Permissions   map[string]string `json:"permissions"`
	}
	if r.ContentLength != 0 {
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			writeError(w, http.StatusBadRequest, "Problems parsing JSON")
			return
		}
	}
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	installed := false
	for _, rp := range s.repos {
		installed = installed || (s.installationID(rp.owner) == id && !s.app.notInstalled[rp.owner])
	}
	if !installed {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	for name, level := range in.Permissions {
		if granted, ok := s.app.permissions[name]; !ok || (level == "write" && granted != "write") || (level != "read" && level != "write") {
			unprocessable(w, "The permissions requested are not granted to this installation.")
			return
		}
	}
	var repos []map[string]any
	var scope []int64
	var names []string
	for _, rp := range s.repos {
		if s.installationID(rp.owner) != id {
			continue
		}
		if slices.Contains(in.RepositoryIDs, rp.id) || slices.Contains(in.Repositories, rp.name) {
			scope, repos, names = append(scope, rp.id), append(repos, s.repoJSON(rp)), append(names, rp.owner+"/"+rp.name)
		}
	}
	if len(scope) != len(in.RepositoryIDs)+len(in.Repositories) {
		unprocessable(w, "There is at least one repository that does not exist or is not accessible to the parent installation.")
		return
	}
	perms := in.Permissions
	if len(perms) == 0 {
		perms = s.app.permissions
	}
	perms = maps.Clone(perms)
	perms["metadata"] = "read" // every installation token reads metadata
	buf := make([]byte, 16)
	_, _ = rand.Read(buf)
	token := "ghs_" + hex.EncodeToString(buf)
	expires := time.Now().Add(s.app.lifetime)
	s.tokens.Add(token, AppBotUser(s.app.slug, s.app.id, s.Host()))
	s.app.tokens[token] = &installToken{installation: id, repos: scope, permissions: perms, expires: expires}
	sort.Strings(names)
	s.app.mints = append(s.app.mints, TokenMint{Installation: id, Repositories: names, Permissions: maps.Clone(in.Permissions)})
	writeJSON(w, http.StatusCreated, map[string]any{"token": token, "repositories": repos, "permissions": perms,
		"expires_at": expires.UTC().Format(time.RFC3339)})
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

// installToken is token's installation token (nil for another token). Callers
// hold s.mu.
func (s *Server) installToken(token string) *installToken {
	if s.app == nil {
		return nil
	}
	return s.app.tokens[token]
}

// tokenExpired: an installation token past its expiry. Callers hold s.mu.
func (s *Server) tokenExpired(token string) bool {
	t := s.installToken(token)
	return t != nil && !time.Now().Before(t.expires)
}

// scopeAllows reports whether token may act on repository rp: any token on any
// repository but an installation token, which works only on its repositories (or
// its installation's). Callers hold s.mu.
func (s *Server) scopeAllows(token string, rp *repo) bool {
	t := s.installToken(token)
	if t == nil {
		return true
	}
	if t.repos == nil {
		return s.installationID(rp.owner) == t.installation
	}
	return slices.Contains(t.repos, rp.id)
}

// permits reports whether token holds one of the permissions (name:level; write
// includes read). Tokens other than installation tokens hold every one. Callers
// hold s.mu.
func (s *Server) permits(token string, anyOf ...string) bool {
	t := s.installToken(token)
	if t == nil || len(anyOf) == 0 {
		return true
	}
	for _, want := range anyOf {
		name, level, _ := strings.Cut(want, ":")
		if got := t.permissions[name]; got == "write" || (got == "read" && level == "read") {
			return true
		}
	}
	return false
}

// forbidden is GitHub's answer to a request the token's permissions do not cover.
func forbidden(w http.ResponseWriter) {
	writeJSON(w, http.StatusForbidden, map[string]any{"message": "Resource not accessible by integration",
		"documentation_url": "https://docs.github.com/rest", "status": "403"})
}
