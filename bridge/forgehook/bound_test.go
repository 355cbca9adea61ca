package forgehook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
)

func signGitHub(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// TestBoundSecretRefusesTheSharedSecret: a repository bound to a tenant's own
// webhook secret takes events signed with that secret only; a "merged" event
// signed with the shared secret (which every tenant's forge hooks use) is refused,
// and a verified one is scoped to the tenant's namespace. Repositories bound to
// nothing keep working with the shared secret.
func TestBoundSecretRefusesTheSharedSecret(t *testing.T) {
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

// Forged bodies, each signed with a secret that verifies the repository the body
// names: the event is routed by that repository, so a pull request, a repository
// name or a merge request of another repository in the same body is refused (403)
// and nothing is delivered.
func TestForgedBodiesNamingAnotherRepositoryAreRefused(t *testing.T) {
	var got []forgehook.Event
	sink := sinkFunc(func(e forgehook.Event) { got = append(got, e) })
	bound := map[string]forgehook.BoundSecret{
		"github.example.com/tenant-a/app":    {Namespace: "tenant-a", Secret: []byte("a-own")},
		"github.example.com/tenant-b/bundle": {Namespace: "tenant-b", Secret: []byte("b-own")},
		"gitlab.example.com/tenant-b/bundle": {Namespace: "tenant-b", Secret: []byte("b-gitlab")},
	}
	h := &forgehook.Handler{Secret: forgehook.StaticSecret([]byte("shared")), Sink: sink,
		RepoSecrets: func(_ context.Context, repo string) ([]forgehook.BoundSecret, error) {
			if b, ok := bound[repo]; ok {
				return []forgehook.BoundSecret{b}, nil
			}
			return nil, nil
		}}
	github := func(repoURL, fullName, prURL string) string {
		return `{"action":"closed","number":7,"pull_request":{"number":7,"html_url":"` + prURL + `","state":"closed","merged":true,"head":{"ref":"x"}},` +
			`"repository":{"full_name":"` + fullName + `","html_url":"` + repoURL + `"}}`
	}
	send := func(body, secret string) int {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("X-GitHub-Event", "pull_request")
		r.Header.Set("X-Hub-Signature-256", signGitHub(secret, body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	const (
		appURL    = "https://github.example.com/tenant-a/app"
		bundleURL = "https://github.example.com/tenant-b/bundle"
		otherURL  = "https://github.example.com/someone/else"
	)
	for _, c := range []struct {
		name, body, secret string
	}{
		{"tenant A's bound secret, naming B's pull request", github(appURL, "tenant-a/app", bundleURL+"/pull/7"), "a-own"},
		{"tenant A's bound secret, naming B's repository by name", github(appURL, "tenant-b/bundle", appURL+"/pull/7"), "a-own"},
		{"the shared secret for an unbound repository, naming bound B's pull request", github(otherURL, "someone/else", bundleURL+"/pull/7"), "shared"},
		{"the shared secret, naming the same path on another host", github(otherURL, "someone/else", "https://gitlab.example.com/someone/else/pull/7"), "shared"},
		{"a pull request number that is not the URL's", github(otherURL, "someone/else", otherURL+"/pull/8"), "shared"},
	} {
		if code := send(c.body, c.secret); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", c.name, code)
		}
	}
	if len(got) != 0 {
		t.Fatalf("forged events delivered: %+v", got)
	}
	// The same secrets, each naming its own repository's pull request, are taken.
	if code := send(github(appURL, "tenant-a/app", appURL+"/pull/7"), "a-own"); code != http.StatusAccepted {
		t.Fatalf("tenant A's own event: %d", code)
	}
	if len(got) != 1 || got[0].Repo != "github.example.com/tenant-a/app" || got[0].Namespace != "tenant-a" {
		t.Fatalf("tenant A's own event routed by its repository, for tenant-a: %+v", got)
	}

	// GitLab: the project chooses the token, the merge request must be the project's.
	gitlab := func(project, path, mrURL string) int {
		body := `{"object_kind":"merge_request","project":{"path_with_namespace":"` + path + `","web_url":"` + project + `"},` +
			`"object_attributes":{"iid":7,"action":"merge","state":"merged","url":"` + mrURL + `","source_branch":"x"}}`
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("X-Gitlab-Event", "Merge Request Hook")
		r.Header.Set("X-Gitlab-Token", "shared")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if code := gitlab("https://gitlab.example.com/someone/else", "someone/else", "https://gitlab.example.com/tenant-b/bundle/-/merge_requests/7"); code != http.StatusForbidden {
		t.Fatalf("a shared-token Merge Request Hook naming bound B's merge request: %d, want 403", code)
	}
	if code := gitlab("https://gitlab.example.com/tenant-b/bundle", "tenant-b/bundle", "https://gitlab.example.com/tenant-b/bundle/-/merge_requests/7"); code != http.StatusUnauthorized {
		t.Fatalf("the shared token for bound B's project: %d, want 401", code)
	}
	if len(got) != 1 {
		t.Fatalf("forged GitLab events delivered: %+v", got[1:])
	}
}

// A body over the limit is refused 413: at once when its Content-Length says so,
// and after limit+1 bytes when it announces nothing (chunked).
func TestBodyLimit(t *testing.T) {
	h := &forgehook.Handler{Secret: forgehook.StaticSecret([]byte("s")), Sink: sinkFunc(func(forgehook.Event) {}), MaxBody: 1024}
	for name, announce := range map[string]bool{"announced": true, "chunked": false} {
		body := &countingReader{r: strings.NewReader(strings.Repeat("x", 64<<10))}
		r := httptest.NewRequest(http.MethodPost, "/", body)
		r.ContentLength = -1
		if announce {
			r.ContentLength = 64 << 10
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("%s: %d, want 413", name, w.Code)
		}
		if announce && body.n != 0 || !announce && body.n > 1024+1 {
			t.Fatalf("%s: %d bytes read for a limit of 1024", name, body.n)
		}
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// The shared secret is read from its file again once a few seconds old: a rotated
// secret verifies without a restart, the old one no longer does, and an emptied
// or removed file fails (503) rather than verifying with a stale secret.
func TestFileSecretIsReadAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(path, []byte("first\n"), 0o600))
	s := forgehook.FileSecret(path)
	got, err := s(context.Background())
	require.NoError(t, err)
	require.Equal(t, "first", string(got))
	require.NoError(t, os.WriteFile(path, []byte("second"), 0o600))
	require.Eventually(t, func() bool {
		got, err := s(context.Background())
		return err == nil && string(got) == "second"
	}, time.Minute, 100*time.Millisecond, "the rotated secret is read")
	require.NoError(t, os.Remove(path))
	require.Eventually(t, func() bool {
		_, err := s(context.Background())
		return err != nil
	}, time.Minute, 100*time.Millisecond, "a removed secret is an error, not the last value")
}
