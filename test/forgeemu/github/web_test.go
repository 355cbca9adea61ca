package github

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	gogithub "github.com/google/go-github/v92/github"
)

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// TestWebPagesPersistenceAndMerge opens a draft PR, reads it on the web pages,
// merges it through the REST API, saves the state and loads it into a new emulator
// listening on a fixed address.
func TestWebPagesPersistenceAndMerge(t *testing.T) {
	s, gh, _ := setup(t)
	ctx := context.Background()
	push(t, gh, "feature", "bump [skip ci]", true)
	body := "## Status\n\n| Image | New |\n|---|---|\n| `op` | **sha256:abc** |\n\n- [ ] Release now\n<!-- nudgeflow:state {} -->\n<script>x</script>"
	pr, _, err := gh.PullRequests.Create(ctx, "org", "bundle", gogithub.CreatePullRequest{
		Title: new("Update images"), Head: "feature", Base: "main", Body: &body, Draft: new(true)})
	if err != nil {
		t.Fatal(err)
	}

	page := get(t, s.URL()+"/org/bundle/pull/1")
	for _, want := range []string{"Update images", `id="pr-state">draft<`, "<th>Image</th>", "<code>op</code>",
		"<strong>sha256:abc</strong>", `type="checkbox" disabled> Release now`, "bump [skip ci]", `id="ci-count">0<`} {
		if !strings.Contains(page, want) {
			t.Errorf("PR page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, `<div class="body" id="pr-body"><!--`) {
		t.Errorf("PR page must escape the description and drop hidden state:\n%s", page)
	}
	if repo := get(t, s.URL()+"/org/bundle"); !strings.Contains(repo, `href="/org/bundle/pull/1"`) || !strings.Contains(repo, "Initial commit") {
		t.Errorf("repository page lacks the PR or the commits:\n%s", repo)
	}
	if index := get(t, s.URL()+"/"); !strings.Contains(index, `href="/org/bundle"`) {
		t.Errorf("index lacks the repository:\n%s", index)
	}

	res, _, err := gh.PullRequests.Merge(ctx, "org", "bundle", pr.GetNumber(), "", nil)
	if err != nil || !res.GetMerged() {
		t.Fatalf("merge: %v %+v", err, res)
	}
	if _, _, err := gh.PullRequests.Merge(ctx, "org", "bundle", pr.GetNumber(), "", nil); err == nil {
		t.Fatal("merging a merged PR must fail")
	}

	path := filepath.Join(t.TempDir(), "emulator.json")
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	s2, err := NewAt("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if ok, err := s2.Load(path); !ok || err != nil {
		t.Fatalf("load: %v %v", ok, err)
	}
	got, ok := s2.PR("org", "bundle", 1)
	if !ok || !got.Merged || got.Title != "Update images" {
		t.Fatalf("loaded PR %+v", got)
	}
	want, _ := s.Head("org", "bundle", "main")
	if head, _ := s2.Head("org", "bundle", "main"); head.SHA != want.SHA {
		t.Fatalf("main after load %s, want %s", head.SHA, want.SHA)
	}
	if _, err := NewAt(s2.Host()); err == nil {
		t.Fatal("NewAt must refuse an address in use")
	}
	if ok, err := New().Load(filepath.Join(t.TempDir(), "missing.json")); ok || err != nil {
		t.Fatalf("missing file: %v %v", ok, err)
	}
}
