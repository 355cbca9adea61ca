package forgehook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"

	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
)

// giteaPayload is a pull_request payload as Gitea and Forgejo marshal it
// (modules/structs.PullRequestPayload): the PR and the repository are the API's own
// objects, built here from the Gitea SDK's types, which share their JSON.
func giteaPayload(t *testing.T, action, title string, state gitea.StateType, merged bool) []byte {
	t.Helper()
	pr := &gitea.PullRequest{ID: 7, Index: 12, Title: title, State: state, HasMerged: merged,
		URL: "http://127.0.0.1:3000/org/bundle/pulls/12", HTMLURL: "http://127.0.0.1:3000/org/bundle/pulls/12",
		Head: &gitea.PRBranchInfo{Name: "konflux/cg", Ref: "konflux/cg", Sha: "0123abcd"},
		Base: &gitea.PRBranchInfo{Name: "main", Ref: "main", Sha: "fedc"}}
	b, err := json.Marshal(map[string]any{
		"action": action, "number": 12, "pull_request": pr,
		"repository":         &gitea.Repository{ID: 3, Name: "bundle", FullName: "org/bundle", HTMLURL: "http://127.0.0.1:3000/org/bundle"},
		"sender":             &gitea.User{UserName: "dev"},
		"requested_reviewer": nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// giteaHeaders are the headers Gitea's deliver.go adds (addDefaultHeaders), GitHub's
// compatible ones included; forgejo adds Forgejo's own, which it sends as well.
func giteaHeaders(h http.Header, event, secret string, body []byte, forgejo bool) {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	sig := hex.EncodeToString(m.Sum(nil))
	for _, p := range []string{"X-Gitea-", "X-Gogs-"} {
		h.Set(p+"Delivery", "d-1")
		h.Set(p+"Event", event)
		h.Set(p+"Event-Type", event)
		h.Set(p+"Signature", sig)
	}
	h.Set("X-Hub-Signature-256", "sha256="+sig)
	h.Set("X-GitHub-Delivery", "d-1")
	h.Set("X-GitHub-Event", event)
	if forgejo {
		h.Set("X-Forgejo-Delivery", "d-1")
		h.Set("X-Forgejo-Event", event)
		h.Set("X-Forgejo-Event-Type", event)
		h.Set("X-Forgejo-Signature", sig)
	}
}

func TestForgejoPullRequest(t *testing.T) {
	open := giteaPayload(t, "opened", "WIP: Konflux group g", gitea.StateOpen, false)
	merged := giteaPayload(t, "closed", "Konflux group g", gitea.StateClosed, true)
	url := "http://127.0.0.1:3000/org/bundle/pulls/12"
	for _, c := range []struct {
		name    string
		body    []byte
		event   string
		secret  string
		forgejo bool
		edit    func(http.Header)
		want    int
		ev      *forgehook.Event
	}{
		{name: "gitea draft opened", body: open, event: "pull_request", secret: "k", want: http.StatusAccepted,
			ev: &forgehook.Event{Provider: "forgejo", DeliveryID: "d-1", Action: "opened", Repo: "127.0.0.1:3000/org/bundle", URL: url, RepoFullName: "org/bundle",
				Number: 12, HeadRef: "konflux/cg", HeadSHA: "0123abcd", Draft: true, State: "open"}},
		{name: "forgejo merged", body: merged, event: "pull_request", secret: "k", forgejo: true, want: http.StatusAccepted,
			ev: &forgehook.Event{Provider: "forgejo", DeliveryID: "d-1", Action: "closed", Repo: "127.0.0.1:3000/org/bundle", URL: url, RepoFullName: "org/bundle",
				Number: 12, HeadRef: "konflux/cg", HeadSHA: "0123abcd", Merged: true, State: "closed"}},
		// Only Forgejo's headers (a Forgejo that dropped Gitea's): still Forgejo.
		{name: "forgejo headers alone", body: merged, event: "pull_request", secret: "k", forgejo: true, want: http.StatusAccepted,
			edit: func(h http.Header) {
				for k := range h {
					if !strings.HasPrefix(k, "X-Forgejo-") {
						h.Del(k)
					}
				}
			},
			ev: &forgehook.Event{Provider: "forgejo", DeliveryID: "d-1", Action: "closed", Repo: "127.0.0.1:3000/org/bundle", URL: url, RepoFullName: "org/bundle",
				Number: 12, HeadRef: "konflux/cg", HeadSHA: "0123abcd", Merged: true, State: "closed"}},
		{name: "wrong secret", body: open, event: "pull_request", secret: "other", want: http.StatusUnauthorized},
		{name: "forgejo wrong secret", body: open, event: "pull_request", secret: "other", forgejo: true, want: http.StatusUnauthorized},
		// A Gitea delivery is judged by Gitea's signature, even when GitHub's header
		// would pass.
		{name: "no gitea signature", body: open, event: "pull_request", secret: "k", want: http.StatusUnauthorized,
			edit: func(h http.Header) { h.Del("X-Gitea-Signature") }},
		{name: "github-style signature in gitea's header", body: open, event: "pull_request", secret: "k", want: http.StatusUnauthorized,
			edit: func(h http.Header) { h.Set("X-Gitea-Signature", h.Get("X-Hub-Signature-256")) }},
		{name: "push", body: []byte(`{"ref":"refs/heads/main"}`), event: "push", secret: "k", want: http.StatusNoContent},
		{name: "comment", body: open, event: "issue_comment", secret: "k", want: http.StatusNoContent},
		{name: "malformed", body: []byte(`{"action":"opened"}`), event: "pull_request", secret: "k", want: http.StatusBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			sink := make(chanSink, 1)
			h := &forgehook.Handler{Secret: forgehook.StaticSecret([]byte("k")), Sink: sink}
			req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(c.body)))
			giteaHeaders(req.Header, c.event, c.secret, c.body, c.forgejo)
			if c.edit != nil {
				c.edit(req.Header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.want {
				t.Fatalf("status %d, want %d", rec.Code, c.want)
			}
			if c.ev == nil {
				if len(sink) != 0 {
					t.Fatalf("event delivered: %+v", <-sink)
				}
				return
			}
			if e := <-sink; e != *c.ev {
				t.Fatalf("event %+v, want %+v", e, *c.ev)
			}
		})
	}
}

// The GitHub path is unchanged by Forgejo's: a delivery with only GitHub's headers
// is GitHub's, its draft the payload's flag and never the title.
func TestGitHubDeliveryStaysGitHub(t *testing.T) {
	sink := make(chanSink, 1)
	h := &forgehook.Handler{Secret: forgehook.StaticSecret([]byte("k")), Sink: sink}
	body := giteaPayload(t, "opened", "WIP: x", gitea.StateOpen, false)
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(string(body)))
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-Hub-Signature-256", githubemu.Sign("k", body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("status %d", rec.Code)
	}
	if e := <-sink; e.Provider != "github" || e.Draft {
		t.Fatalf("event %+v", e)
	}
}
