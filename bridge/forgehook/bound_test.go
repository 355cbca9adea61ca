package forgehook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
)

func signGitHub(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// TestF8BoundSecretRefusesTheSharedSecret: a repository bound to a tenant's own
// webhook secret takes events signed with that secret only; a "merged" event
// signed with the shared secret (which every tenant's forge hooks use) is refused,
// and a verified one is scoped to the tenant's namespace. Repositories bound to
// nothing keep working with the shared secret.
func TestF8BoundSecretRefusesTheSharedSecret(t *testing.T) {
	var got []forgehook.Event
	sink := sinkFunc(func(e forgehook.Event) { got = append(got, e) })
	h := &forgehook.Handler{Secret: forgehook.StaticSecret([]byte("shared")), Sink: sink,
		RepoSecrets: func(_ context.Context, repo string) ([]forgehook.BoundSecret, error) {
			if repo == "github.example.com/tenant-b/bundle" {
				return []forgehook.BoundSecret{{Namespace: "tenant-b", Secret: []byte("b-own")}}, nil
			}
			return nil, nil
		}}
	merged := func(repo string) string {
		return `{"action":"closed","number":7,"pull_request":{"number":7,"html_url":"https://github.example.com/` + repo + `/pull/7","state":"closed","merged":true},` +
			`"repository":{"full_name":"` + repo + `","html_url":"https://github.example.com/` + repo + `"}}`
	}
	send := func(body, secret string) int {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("X-GitHub-Event", "pull_request")
		r.Header.Set("X-GitHub-Delivery", "d-"+secret)
		r.Header.Set("X-Hub-Signature-256", signGitHub(secret, body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if code := send(merged("tenant-b/bundle"), "shared"); code != http.StatusUnauthorized || len(got) != 0 {
		t.Fatalf("a merged event for a bound repository signed with the shared secret is refused: %d, delivered %v", code, got)
	}
	if code := send(merged("tenant-b/bundle"), "b-own"); code != http.StatusAccepted || len(got) != 1 || got[0].Namespace != "tenant-b" {
		t.Fatalf("signed with the repository's own secret it is taken, for tenant-b only: %d %+v", code, got)
	}
	if code := send(merged("tenant-a/bundle"), "shared"); code != http.StatusAccepted || len(got) != 2 || got[1].Namespace != "" {
		t.Fatalf("an unbound repository keeps the shared secret: %d %+v", code, got)
	}
	if code := send(merged("tenant-a/bundle"), "b-own"); code != http.StatusUnauthorized || len(got) != 2 {
		t.Fatalf("a bound secret signs nothing for other repositories: %d", code)
	}
}

type sinkFunc func(forgehook.Event)

func (f sinkFunc) PullRequestEvent(_ context.Context, e forgehook.Event) error { f(e); return nil }
