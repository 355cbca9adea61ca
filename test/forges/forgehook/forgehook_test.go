// Package forgehook_test sends the forge emulators' and a real Gitea's webhooks
// through the bridge's webhook verifier and reader.
package forgehook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
)

type chanSink chan forgehook.Event

func (c chanSink) PullRequestEvent(_ context.Context, e forgehook.Event) error { c <- e; return nil }

func TestEmulatorWebhooks(t *testing.T) {
	sink := make(chanSink, 20)
	hs := httptest.NewServer(&forgehook.Handler{Secret: forgehook.StaticSecret([]byte("s3cret")), Sink: sink})
	defer hs.Close()
	emu := githubemu.New()
	defer emu.Close()
	emu.AddWebhook(hs.URL, "s3cret")
	emu.AddWebhook(hs.URL, "wrong-secret")
	emu.CreateRepo("org", "bundle", "main", map[string]string{"Dockerfile": "FROM x\n"})
	if _, err := emu.HumanCommit("org", "bundle", "main", githubemu.User{Email: "a@b"}, map[string]string{"x": "y"}, "base"); err != nil {
		t.Fatal(err)
	}
	// A PR needs a branch: make one through the helper and open it over the API is the
	// activities' job; here a person's flow is enough: open via REST.
	emu.AddToken("tok", githubemu.User{Login: "dev", Email: "dev@example.com"})
	req, _ := http.NewRequest(http.MethodPost, emu.APIURL()+"repos/org/bundle/git/refs", strings.NewReader(`{"ref":"refs/heads/cg","sha":"`+head(t, emu)+`"}`))
	do(t, req)
	if _, err := emu.HumanCommit("org", "bundle", "cg", githubemu.User{Email: "dev@example.com"}, map[string]string{"z": "1"}, "work [skip ci]"); err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequest(http.MethodPost, emu.APIURL()+"repos/org/bundle/pulls", strings.NewReader(`{"title":"t","head":"cg","base":"main","draft":true}`))
	do(t, req)
	if err := emu.MergePR("org", "bundle", 1); err != nil {
		t.Fatal(err)
	}
	repo := forgehook.RepoKey(emu.URL() + "/org/bundle")
	want := []forgehook.Event{
		{Provider: "github", Action: "opened", Repo: repo, URL: emu.URL() + "/org/bundle/pull/1", RepoFullName: "org/bundle", Number: 1, HeadRef: "cg", Draft: true, State: "open"},
		{Provider: "github", Action: "closed", Repo: repo, URL: emu.URL() + "/org/bundle/pull/1", RepoFullName: "org/bundle", Number: 1, HeadRef: "cg", Draft: true, State: "closed", Merged: true},
	}
	for i, w := range want {
		select {
		case e := <-sink:
			if e.DeliveryID == "" || e.HeadSHA == "" {
				t.Fatalf("event %d lacks ids: %+v", i, e)
			}
			e.DeliveryID, e.HeadSHA = "", ""
			if e != w {
				t.Fatalf("event %d = %+v, want %+v", i, e, w)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d not received", i)
		}
	}
	// Every delivery has been answered once four were recorded: 202 for the right
	// secret, 401 for the wrong one.
	deadline := time.Now().Add(10 * time.Second)
	for len(emu.Deliveries()) < 4 && time.Now().Before(deadline) {
		select {
		case <-sink:
			t.Fatal("event accepted with a wrong signature")
		case <-time.After(10 * time.Millisecond):
		}
	}
	codes := map[int]int{}
	for _, d := range emu.Deliveries() {
		codes[d.Status]++
	}
	if codes[http.StatusAccepted] != 2 || codes[http.StatusUnauthorized] != 2 {
		t.Fatalf("delivery statuses %v", codes)
	}
}

func head(t *testing.T, emu *githubemu.Server) string {
	c, ok := emu.Head("org", "bundle", "main")
	if !ok {
		t.Fatal("no main")
	}
	return c.SHA
}

func do(t *testing.T, req *http.Request) {
	t.Helper()
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %v %v", req.Method, req.URL, resp.Status, err)
	}
	_ = resp.Body.Close()
}

func TestHandler(t *testing.T) {
	sink := make(chanSink, 2)
	h := &forgehook.Handler{Secret: forgehook.StaticSecret([]byte("k")), Sink: sink}
	body := `{"action":"edited","number":3,"pull_request":{"number":3,"html_url":"https://github.com/o/r/pull/3","state":"open","head":{"ref":"b","sha":"s"}},` +
		`"repository":{"full_name":"o/r","html_url":"https://github.com/o/r"}}`
	for _, c := range []struct {
		event, sig, body string
		want             int
	}{
		{"pull_request", githubemu.Sign("k", []byte(body)), body, http.StatusAccepted},
		{"pull_request", githubemu.Sign("other", []byte(body)), body, http.StatusUnauthorized},
		{"pull_request", "", body, http.StatusUnauthorized},
		{"pull_request", "sha256=zz", body, http.StatusUnauthorized},
		{"push", githubemu.Sign("k", []byte(body)), body, http.StatusNoContent},
		{"pull_request", githubemu.Sign("k", []byte("{}")), "{}", http.StatusBadRequest},
	} {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body))
		req.Header.Set("X-GitHub-Event", c.event)
		req.Header.Set("X-Hub-Signature-256", c.sig)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s %q: %d, want %d", c.event, c.sig, rec.Code, c.want)
		}
	}
	if e := <-sink; e.Action != "edited" || e.Number != 3 || e.RepoFullName != "o/r" {
		t.Errorf("event %+v", e)
	}
}

func FuzzValid(f *testing.F) {
	f.Add([]byte("k"), []byte("{}"), "sha256=00")
	f.Fuzz(func(t *testing.T, secret, body []byte, header string) {
		if forgehook.Valid(secret, body, header) && header != githubemu.Sign(string(secret), body) &&
			!strings.EqualFold(header, githubemu.Sign(string(secret), body)) {
			t.Fatal("accepted a foreign signature")
		}
	})
}

// A repository's own webhook (AddRepoWebhook) sends that repository's events only,
// signed with its own secret, beside an App-wide hook: the way make run and the
// test worlds deliver for repositories bound to a tenant's secret.
func TestEmulatorRepositoryWebhook(t *testing.T) {
	own, shared := make(chanSink, 20), make(chanSink, 20)
	ownHook := httptest.NewServer(&forgehook.Handler{Secret: forgehook.StaticSecret([]byte("own")), Sink: own})
	defer ownHook.Close()
	sharedHook := httptest.NewServer(&forgehook.Handler{Secret: forgehook.StaticSecret([]byte("shared")), Sink: shared})
	defer sharedHook.Close()
	emu := githubemu.New()
	defer emu.Close()
	emu.AddRepoWebhook("org/bound", ownHook.URL, "own")
	emu.AddWebhook(sharedHook.URL, "shared")
	emu.AddToken("tok", githubemu.User{Login: "dev", Email: "dev@example.com"})
	for _, repo := range []string{"bound", "other"} {
		emu.CreateRepo("org", repo, "main", map[string]string{"Dockerfile": "FROM x\n"})
		c, _ := emu.Head("org", repo, "main")
		req, _ := http.NewRequest(http.MethodPost, emu.APIURL()+"repos/org/"+repo+"/git/refs", strings.NewReader(`{"ref":"refs/heads/cg","sha":"`+c.SHA+`"}`))
		do(t, req)
		if _, err := emu.HumanCommit("org", repo, "cg", githubemu.User{Email: "dev@example.com"}, map[string]string{"z": "1"}, "work"); err != nil {
			t.Fatal(err)
		}
		req, _ = http.NewRequest(http.MethodPost, emu.APIURL()+"repos/org/"+repo+"/pulls", strings.NewReader(`{"title":"t","head":"cg","base":"main"}`))
		do(t, req)
	}
	select {
	case e := <-own:
		if e.RepoFullName != "org/bound" {
			t.Fatalf("the repository hook delivered %s's event", e.RepoFullName)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the repository hook's event not received")
	}
	got := map[string]bool{}
	for range 2 {
		select {
		case e := <-shared:
			got[e.RepoFullName] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("the App-wide hook delivered %v only", got)
		}
	}
	if !got["org/bound"] || !got["org/other"] {
		t.Fatalf("the App-wide hook delivers every repository's events: %v", got)
	}
	if len(own) != 0 {
		t.Fatalf("the repository hook delivered another repository's event: %+v", <-own)
	}
}
