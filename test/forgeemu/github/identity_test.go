package github

import (
	"fmt"
	"net/http"
	"testing"
)

// apiCommit makes a commit through the git data API with auth, naming no author,
// and returns its author and committer.
func (a appClient) apiCommit(auth string) (author, committer map[string]any) {
	a.t.Helper()
	code, ref := a.do(http.MethodGet, "/api/v3/repos/org/mine/git/ref/heads/main", auth, nil)
	if code != http.StatusOK {
		a.t.Fatalf("ref: %d", code)
	}
	head := ref["object"].(map[string]any)["sha"].(string)
	_, parent := a.do(http.MethodGet, "/api/v3/repos/org/mine/git/commits/"+head, auth, nil)
	tree := parent["tree"].(map[string]any)["sha"].(string)
	code, c := a.do(http.MethodPost, "/api/v3/repos/org/mine/git/commits", auth,
		map[string]any{"message": "nudge", "tree": tree, "parents": []string{head}})
	if code != http.StatusCreated {
		a.t.Fatalf("create commit: %d %v", code, c)
	}
	return c["author"].(map[string]any), c["committer"].(map[string]any)
}

// A platform-native commit (the API's, no author named) is the token's identity
// as GitHub records it: an App installation token's, and a bot token's whatever
// address it was registered with, "<slug>[bot] <<bot user id>+<slug>[bot]@users.noreply.<host>>";
// a person's token the account's commit email, else its noreply address. Who the
// token is reads the same through GraphQL's viewer (what Renovate asks of an
// installation token) and GET /user (of any other; 403 for a bot, as GitHub).
func TestAPICommitAuthorIsTheTokensIdentity(t *testing.T) {
	a := newApp(t)
	_, appTok := a.mint(map[string]any{"repositories": []string{"mine"}})
	a.s.AddToken("ghs_devbot", User{Login: "nudgeflow[bot]", Name: "nudgeflow[bot]", Email: "nudgeflow-bot@users.noreply.127.0.0.1", Type: UserTypeBot, ID: 41000001})
	a.s.AddToken("ghp_private", User{Login: "alice", Name: "Alice"})
	a.s.AddToken("ghp_public", User{Login: "bob", Name: "Bob", Email: "bob@example.com", ID: 99})
	aliceID := userID(User{Login: "alice"})

	for _, tc := range []struct {
		name, auth, wantName, wantEmail, wantLogin string
		wantID                                     int64
		userStatus                                 int
	}{
		{"App installation token", "Bearer " + appTok, "app[bot]", fmt.Sprintf("%d+app[bot]@users.noreply.127.0.0.1", AppBotUserID(7)), "app[bot]", AppBotUserID(7), http.StatusForbidden},
		{"bot token registered with another address", "token ghs_devbot", "nudgeflow[bot]", "41000001+nudgeflow[bot]@users.noreply.127.0.0.1", "nudgeflow[bot]", 41000001, http.StatusForbidden},
		{"person with a private email", "token ghp_private", "Alice", fmt.Sprintf("%d+alice@users.noreply.127.0.0.1", aliceID), "alice", aliceID, http.StatusOK},
		{"person with a commit email", "token ghp_public", "Bob", "bob@example.com", "bob", 99, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			author, committer := a.apiCommit(tc.auth)
			if author["name"] != tc.wantName || author["email"] != tc.wantEmail {
				t.Errorf("author %v, want %s <%s>", author, tc.wantName, tc.wantEmail)
			}
			if committer["email"] != tc.wantEmail {
				t.Errorf("committer %v, want <%s>", committer, tc.wantEmail)
			}
			code, v := a.do(http.MethodPost, "/api/graphql", tc.auth, map[string]any{"query": "query { viewer { login databaseId }}"})
			viewer, _ := v["data"].(map[string]any)["viewer"].(map[string]any)
			if code != http.StatusOK || viewer["login"] != tc.wantLogin || int64(viewer["databaseId"].(float64)) != tc.wantID {
				t.Errorf("viewer: %d %v, want %s id %d", code, v, tc.wantLogin, tc.wantID)
			}
			code, u := a.do(http.MethodGet, "/api/v3/user", tc.auth, nil)
			if code != tc.userStatus {
				t.Fatalf("GET /user: %d %v, want %d", code, u, tc.userStatus)
			}
			if code == http.StatusOK && (u["login"] != tc.wantLogin || int64(u["id"].(float64)) != tc.wantID) {
				t.Errorf("GET /user: %v, want %s id %d", u, tc.wantLogin, tc.wantID)
			}
		})
	}
}
