package forgehook_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	glemu "github.com/nudgeflow/nudgeflow/test/forgeemu/gitlab"
)

// The GitLab emulator's Merge Request Hooks reach the sink when X-Gitlab-Token is
// the secret, with GitLab's actions and states mapped (merged is closed + Merged);
// a wrong token is refused.
func TestGitLabMergeRequestHooks(t *testing.T) {
	sink := make(chanSink, 20)
	hs := httptest.NewServer(&forgehook.Handler{Secret: forgehook.StaticSecret([]byte("s3cret")), Sink: sink})
	defer hs.Close()
	emu := glemu.New()
	defer emu.Close()
	emu.AddWebhook(hs.URL, "s3cret")
	emu.AddWebhook(hs.URL, "wrong")
	emu.AddToken("tok", glemu.User{Username: "dev", Name: "Dev", Email: "dev@example.com"})
	emu.CreateProject("group/sub", "bundle", "main", map[string]string{"a": "1"})
	post := func(path, body string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, emu.APIURL()+path, bytes.NewBufferString(body))
		req.Header.Set("PRIVATE-TOKEN", "tok")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s: %v %v", path, err, resp)
		}
		_ = resp.Body.Close()
	}
	post("projects/group%2Fsub%2Fbundle/repository/commits", `{"branch":"cg","start_branch":"main","commit_message":"x [skip ci]","actions":[{"action":"update","file_path":"a","content":"2"}]}`)
	post("projects/group%2Fsub%2Fbundle/merge_requests", `{"source_branch":"cg","target_branch":"main","title":"Draft: t"}`)
	if err := emu.MarkReady("group/sub", "bundle", 1); err != nil {
		t.Fatal(err)
	}
	if err := emu.MergeMR("group/sub", "bundle", 1); err != nil {
		t.Fatal(err)
	}
	url := emu.URL() + "/group/sub/bundle/-/merge_requests/1"
	repo := forgehook.RepoKey(emu.URL() + "/group/sub/bundle")
	want := []forgehook.Event{
		{Provider: "gitlab", Action: "open", Repo: repo, URL: url, RepoFullName: "group/sub/bundle", Number: 1, HeadRef: "cg", Draft: true, State: "open"},
		{Provider: "gitlab", Action: "update", Repo: repo, URL: url, RepoFullName: "group/sub/bundle", Number: 1, HeadRef: "cg", State: "open"},
		{Provider: "gitlab", Action: "merge", Repo: repo, URL: url, RepoFullName: "group/sub/bundle", Number: 1, HeadRef: "cg", State: "closed", Merged: true},
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
	deadline := time.Now().Add(10 * time.Second)
	for len(emu.Deliveries()) < 6 && time.Now().Before(deadline) {
		select {
		case <-sink:
			t.Fatal("event accepted with a wrong token")
		case <-time.After(10 * time.Millisecond):
		}
	}
	codes := map[int]int{}
	for _, d := range emu.Deliveries() {
		codes[d.Status]++
	}
	if codes[http.StatusAccepted] != 3 || codes[http.StatusUnauthorized] != 3 {
		t.Fatalf("delivery statuses %v", codes)
	}
	if emu.CIBuilds("group/sub", "bundle") != 0 {
		t.Fatalf("held commit, then a draft lifted without a new commit: no pipeline, got %d", emu.CIBuilds("group/sub", "bundle"))
	}
}

func TestValidToken(t *testing.T) {
	for _, tc := range []struct {
		token string
		ok    bool
	}{{"s3cret", true}, {"s3cre", false}, {"s3cret ", false}, {"", false}, {"S3CRET", false}} {
		if got := forgehook.ValidToken([]byte("s3cret"), tc.token); got != tc.ok {
			t.Errorf("ValidToken(%q) = %v", tc.token, got)
		}
	}
}
