package github

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

// appClient mints tokens as the App would, with its JWT.
type appClient struct {
	t   *testing.T
	s   *Server
	key *rsa.PrivateKey
}

func newApp(t *testing.T) appClient {
	t.Helper()
	s := New()
	t.Cleanup(s.Close)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s.RegisterApp(7, "app", &key.PublicKey)
	s.CreateRepo("org", "mine", "main", map[string]string{"Dockerfile": "FROM x\n"})
	s.CreateRepo("org", "theirs", "main", map[string]string{"Dockerfile": "FROM x\n"})
	return appClient{t: t, s: s, key: key}
}

// do sends a request with auth ("Bearer ..."), a JSON body when body is not nil,
// and returns the status and decoded answer.
func (a appClient) do(method, path, auth string, body any) (int, map[string]any) {
	a.t.Helper()
	var rd bytes.Buffer
	if body != nil {
		if err := json.NewEncoder(&rd).Encode(body); err != nil {
			a.t.Fatal(err)
		}
	}
	req, err := http.NewRequestWithContext(context.Background(), method, a.s.URL()+path, &rd)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]any{}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (a appClient) jwt() string {
	a.t.Helper()
	now := time.Now()
	signed, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{Issuer: "7",
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute))}).SignedString(a.key)
	if err != nil {
		a.t.Fatal(err)
	}
	return "Bearer " + signed
}

// mint asks for a token; it returns the status and the token ("" when refused).
func (a appClient) mint(body map[string]any) (int, string) {
	a.t.Helper()
	code, inst := a.do(http.MethodGet, "/api/v3/repos/org/mine/installation", a.jwt(), nil)
	if code != http.StatusOK {
		a.t.Fatalf("installation: %d", code)
	}
	id := strconv.FormatInt(int64(inst["id"].(float64)), 10)
	code, out := a.do(http.MethodPost, "/api/v3/app/installations/"+id+"/access_tokens", a.jwt(), body)
	tok, _ := out["token"].(string)
	return code, tok
}

// An installation token works only on its repositories and only as far as its
// permissions go, as GitHub answers: 404 elsewhere, 403 beyond its permissions,
// 422 for a permission the installation lacks, 401 once expired or revoked.
func TestInstallationTokenRepositoriesAndPermissions(t *testing.T) {
	a := newApp(t)
	code, tok := a.mint(map[string]any{"repositories": []string{"mine"}, "permissions": map[string]string{"contents": "read", "pull_requests": "write"}})
	if code != http.StatusCreated {
		t.Fatalf("mint: %d", code)
	}
	auth := "Bearer " + tok
	for _, c := range []struct {
		method, path string
		body         any
		want         int
	}{
		{http.MethodGet, "/api/v3/repos/org/mine", nil, http.StatusOK},
		{http.MethodGet, "/api/v3/repos/org/mine/git/ref/heads/main", nil, http.StatusOK},
		{http.MethodGet, "/api/v3/repos/org/theirs", nil, http.StatusNotFound},
		{http.MethodGet, "/api/v3/repos/org/theirs/git/ref/heads/main", nil, http.StatusNotFound},
		{http.MethodPost, "/api/v3/repos/org/mine/git/blobs", map[string]string{"content": "x"}, http.StatusForbidden},
		{http.MethodPost, "/api/v3/repos/org/mine/statuses/abc", map[string]string{"state": "success"}, http.StatusForbidden},
		{http.MethodGet, "/api/v3/repos/org/mine/commits/main/check-runs", nil, http.StatusForbidden},
		{http.MethodGet, "/api/v3/repos/org/mine/pulls", nil, http.StatusOK},
		// pull_requests covers a PR's comments: past the permission, no PR #1.
		{http.MethodGet, "/api/v3/repos/org/mine/issues/1/comments", nil, http.StatusNotFound},
	} {
		if got, out := a.do(c.method, c.path, auth, c.body); got != c.want {
			t.Errorf("%s %s: %d %v, want %d", c.method, c.path, got, out, c.want)
		} else if got == http.StatusForbidden && out["message"] != "Resource not accessible by integration" {
			t.Errorf("%s %s: message %v", c.method, c.path, out["message"])
		}
	}
	if got := a.s.TokenScope(tok); got != "org/mine" {
		t.Errorf("scope %q", got)
	}
	if got := a.s.TokenPermissions(tok); got["contents"] != "read" || got["metadata"] != "read" || got["checks"] != "" {
		t.Errorf("permissions %v", got)
	}

	a.s.SetAppPermissions(map[string]string{"contents": "write", "pull_requests": "write", "metadata": "read"})
	if code, _ := a.mint(map[string]any{"repositories": []string{"mine"}, "permissions": map[string]string{"checks": "read"}}); code != http.StatusUnprocessableEntity {
		t.Errorf("a permission the installation lacks: %d, want 422", code)
	}
	if code, _ := a.mint(map[string]any{"repositories": []string{"nowhere"}}); code != http.StatusUnprocessableEntity {
		t.Errorf("a repository outside the installation: %d, want 422", code)
	}
	mints := a.s.TokenMints()
	if len(mints) != 1 || fmt.Sprint(mints[0].Repositories) != "[org/mine]" || mints[0].Permissions["contents"] != "read" {
		t.Errorf("mints %+v", mints)
	}

	if code, _ := a.do(http.MethodDelete, "/api/v3/installation/token", auth, nil); code != http.StatusNoContent {
		t.Fatalf("revoke: %d", code)
	}
	if code, _ := a.do(http.MethodGet, "/api/v3/repos/org/mine", auth, nil); code != http.StatusUnauthorized {
		t.Errorf("a revoked token: %d, want 401", code)
	}
	a.s.SetTokenLifetime(0)
	_, expired := a.mint(map[string]any{"repositories": []string{"mine"}})
	if code, out := a.do(http.MethodGet, "/api/v3/repos/org/mine", "Bearer "+expired, nil); code != http.StatusUnauthorized || out["message"] != "Bad credentials" {
		t.Errorf("an expired token: %d %v, want 401", code, out)
	}
}

// The App's bot user is an account of its own, as on GitHub: GET /users/<slug>[bot]
// answers an id that is not the App's, and a commit made through the API with an
// installation token (no author given) is attributed to that user's noreply
// address, "<bot user id>+<slug>[bot]@users.noreply.<host name>".
func TestAppBotUserHasItsOwnIDAndAuthorsTokenCommits(t *testing.T) {
	a := newApp(t)
	code, tok := a.mint(map[string]any{"repositories": []string{"mine"}})
	if code != http.StatusCreated {
		t.Fatalf("mint: %d", code)
	}
	auth := "Bearer " + tok
	code, u := a.do(http.MethodGet, "/api/v3/users/app%5Bbot%5D", auth, nil)
	if code != http.StatusOK {
		t.Fatalf("GET /users/app[bot]: %d %v", code, u)
	}
	id := int64(u["id"].(float64))
	if id == 7 || id != AppBotUserID(7) || u["login"] != "app[bot]" || u["type"] != UserTypeBot {
		t.Fatalf("bot user %v: want its own id %d (not the App's 7), type Bot", u, AppBotUserID(7))
	}
	if code, _ := a.do(http.MethodGet, "/api/v3/users/nobody", auth, nil); code != http.StatusNotFound {
		t.Errorf("GET /users/nobody: %d, want 404", code)
	}

	code, ref := a.do(http.MethodGet, "/api/v3/repos/org/mine/git/ref/heads/main", auth, nil)
	if code != http.StatusOK {
		t.Fatalf("ref: %d", code)
	}
	head := ref["object"].(map[string]any)["sha"].(string)
	code, parent := a.do(http.MethodGet, "/api/v3/repos/org/mine/git/commits/"+head, auth, nil)
	if code != http.StatusOK {
		t.Fatalf("commit: %d", code)
	}
	tree := parent["tree"].(map[string]any)["sha"].(string)
	code, c := a.do(http.MethodPost, "/api/v3/repos/org/mine/git/commits", auth,
		map[string]any{"message": "nudge", "tree": tree, "parents": []string{head}})
	if code != http.StatusCreated {
		t.Fatalf("create commit: %d %v", code, c)
	}
	want := fmt.Sprintf("%d+app[bot]@users.noreply.127.0.0.1", AppBotUserID(7))
	if got := c["author"].(map[string]any)["email"]; got != want {
		t.Errorf("commit author %v, want the bot user's %s", got, want)
	}
	if got := a.s.AppBotUser().Email; got != want {
		t.Errorf("AppBotUser() %s, want %s", got, want)
	}
}
