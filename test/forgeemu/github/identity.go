package github

import (
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"regexp"
	"strings"

	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitstore"
)

// Who a token is, as GitHub answers it and as it authors what the API commits.
//
//	GET  /api/v3/user                          the token's account (a person's token; 403 for an installation or bot token, as GitHub)
//	POST /api/graphql  query { viewer { … } }  login and databaseId of any token (Renovate asks this of an installation token "ghs_…")
//
// A commit made through the API without an author (the git data API's
// createCommit: Renovate's platform-native commit, an App's) gets the token's
// identity as GitHub records it: a bot "<login> <<id>+<login>@users.noreply.<host>>",
// whatever address it was registered with; a person the commit email the account
// was registered with, else the same id-based noreply address GitHub gives an
// account whose email is private.

// userID is a user's account id: the one it was registered with, else a stable
// one of its login (the same across tokens and restarts, never an App bot's).
func userID(u User) int64 {
	if u.ID != 0 {
		return u.ID
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(u.Login))
	return 20_000_000 + int64(h.Sum32()%10_000_000)
}

// isBot: an App's account, by its type or its "[bot]" login.
func isBot(u User) bool { return u.Type == UserTypeBot || strings.HasSuffix(u.Login, "[bot]") }

// NoreplyEmail is GitHub's noreply address of an account on the server at host
// (host:port): "<id>+<login>@users.noreply.<host name>".
func NoreplyEmail(u User, host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return fmt.Sprintf("%d+%s@users.noreply.%s", userID(u), u.Login, host)
}

// CommitIdentity is the author (and committer) GitHub records for a commit that u's
// token makes through the API without naming one.
func (s *Server) CommitIdentity(u User) gitstore.Signature {
	if isBot(u) {
		return gitstore.Signature{Name: u.Login, Email: NoreplyEmail(u, s.Host())}
	}
	name := u.Name
	if name == "" {
		name = u.Login
	}
	email := u.Email
	if email == "" {
		email = NoreplyEmail(u, s.Host())
	}
	return gitstore.Signature{Name: name, Email: email}
}

// getAuthenticatedUser answers GET /user. An installation token, or a bot's,
// gets GitHub's 403: only a person's token has a /user.
func (s *Server) getAuthenticatedUser(w http.ResponseWriter, r *http.Request, u User) {
	if s.installToken(bearer(r)) != nil || isBot(u) {
		writeError(w, http.StatusForbidden, "Resource not accessible by integration")
		return
	}
	out := map[string]any{"login": u.Login, "id": userID(u), "type": "User", "name": u.Name, "email": nil}
	if u.Email != "" {
		out["email"] = u.Email
	}
	writeJSON(w, http.StatusOK, out)
}

var gqlViewer = regexp.MustCompile(`^\s*(query\s*(\w+\s*)?)?\{\s*viewer\s*\{`)

// graphqlViewer answers `query { viewer { login databaseId … } }` — Renovate's
// getAppDetails — for any token; false for any other query. Callers hold s.mu.
func (s *Server) graphqlViewer(w http.ResponseWriter, query string, u User) bool {
	if !gqlViewer.MatchString(query) {
		return false
	}
	viewer := map[string]any{"login": u.Login, "databaseId": userID(u), "name": u.Name}
	if isBot(u) {
		viewer["name"] = u.Login
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"viewer": viewer}})
	return true
}
