package github

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	gogithub "github.com/google/go-github/v92/github"
	"github.com/shurcooL/githubv4"
)

const token = "t0ken"

var bot = User{Login: "nudgeflow[bot]", Name: "nudgeflow", Email: "bot@example.com"}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func setup(t *testing.T) (*Server, *gogithub.Client, *githubv4.Client) {
	t.Helper()
	s := New()
	t.Cleanup(s.Close)
	s.AddToken(token, bot)
	s.CreateRepo("org", "bundle", "main", map[string]string{"Dockerfile": "FROM x\n", "a/b/c.yaml": "k: v\n"})
	gh, err := gogithub.NewClient(gogithub.WithAuthToken(token), gogithub.WithEnterpriseURLs(s.APIURL(), s.APIURL()), gogithub.WithDisableRateLimitCheck())
	if err != nil {
		t.Fatal(err)
	}
	return s, gh, githubv4.NewEnterpriseClient(s.GraphQLURL(), &http.Client{Transport: bearerTransport{token}})
}

// push makes a commit with msg on top of main and points branch at it.
func push(t *testing.T, gh *gogithub.Client, branch, msg string, create bool) string {
	t.Helper()
	ctx := context.Background()
	main, _, err := gh.Git.GetRef(ctx, "org", "bundle", "heads/main")
	if err != nil {
		t.Fatal(err)
	}
	base, _, err := gh.Git.GetCommit(ctx, "org", "bundle", main.GetObject().GetSHA())
	if err != nil {
		t.Fatal(err)
	}
	tree, _, err := gh.Git.CreateTree(ctx, "org", "bundle", base.GetTree().GetSHA(), []*gogithub.TreeEntry{
		{Path: new("Dockerfile"), Mode: new("100644"), Type: new("blob"), Content: new("FROM y " + msg + "\n")}})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := gh.Git.CreateCommit(ctx, "org", "bundle", gogithub.Commit{Message: &msg, Tree: tree, Parents: []*gogithub.Commit{base}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if create {
		_, _, err = gh.Git.CreateRef(ctx, "org", "bundle", gogithub.CreateRef{Ref: "refs/heads/" + branch, SHA: c.GetSHA()})
	} else {
		_, _, err = gh.Git.UpdateRef(ctx, "org", "bundle", "heads/"+branch, gogithub.UpdateRef{SHA: c.GetSHA(), Force: new(true)})
	}
	if err != nil {
		t.Fatal(err)
	}
	return c.GetSHA()
}

func TestAuth(t *testing.T) {
	s, _, _ := setup(t)
	gh, _ := gogithub.NewClient(gogithub.WithAuthToken("wrong"), gogithub.WithEnterpriseURLs(s.APIURL(), s.APIURL()))
	_, resp, err := gh.Repositories.Get(context.Background(), "org", "bundle")
	if err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("err = %v", err)
	}
	anon, _ := gogithub.NewClient(gogithub.WithEnterpriseURLs(s.APIURL(), s.APIURL()))
	if _, resp, _ := anon.Repositories.Get(context.Background(), "org", "bundle"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous status %d", resp.StatusCode)
	}
}

func TestGitDataAndDraftLifecycle(t *testing.T) {
	s, gh, gql := setup(t)
	ctx := context.Background()

	repo, _, err := gh.Repositories.Get(ctx, "org", "bundle")
	if err != nil || repo.GetDefaultBranch() != "main" {
		t.Fatalf("repo %v, %v", repo, err)
	}
	if _, resp, _ := gh.Git.GetRef(ctx, "org", "bundle", "heads/nope"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("missing ref status %d", resp.StatusCode)
	}
	main, _, _ := gh.Git.GetRef(ctx, "org", "bundle", "heads/main")
	c, _, _ := gh.Git.GetCommit(ctx, "org", "bundle", main.GetObject().GetSHA())
	tree, _, err := gh.Git.GetTree(ctx, "org", "bundle", c.GetTree().GetSHA(), true)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range tree.Entries {
		paths = append(paths, e.GetType()+":"+e.GetPath())
	}
	if got := strings.Join(paths, ","); got != "blob:Dockerfile,tree:a,tree:a/b,blob:a/b/c.yaml" {
		t.Fatalf("tree %s", got)
	}
	blob, _, err := gh.Git.GetBlobRaw(ctx, "org", "bundle", tree.Entries[0].GetSHA())
	if err != nil || string(blob) != "FROM x\n" {
		t.Fatalf("blob %q %v", blob, err)
	}
	if tree.Entries[0].GetSHA() != "280c0670b91f73abccbe053855ca05f6f4467caa" { // git hash-object of "FROM x\n"
		t.Fatalf("blob sha %q", tree.Entries[0].GetSHA())
	}

	held := push(t, gh, "cg", "update [skip ci]", true)
	pr, _, err := gh.PullRequests.Create(ctx, "org", "bundle", gogithub.CreatePullRequest{Title: new("t"), Head: "cg", Base: "main", Body: new("b"), Draft: new(true)})
	if err != nil || !pr.GetDraft() || pr.GetHead().GetSHA() != held {
		t.Fatalf("create %v %v", pr, err)
	}
	// REST ignores draft on PATCH, like GitHub.
	pr, _, err = gh.PullRequests.Edit(ctx, "org", "bundle", pr.GetNumber(), &gogithub.PullRequest{Draft: new(false), Body: new("b2")})
	if err != nil || !pr.GetDraft() || pr.GetBody() != "b2" {
		t.Fatalf("edit %v %v", pr, err)
	}
	// A second PR for the same head is refused with GitHub's 422.
	_, resp, err := gh.PullRequests.Create(ctx, "org", "bundle", gogithub.CreatePullRequest{Title: new("t"), Head: "cg", Base: "main"})
	var er *gogithub.ErrorResponse
	if !errors.As(err, &er) || resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(er.Errors[0].Message, "A pull request already exists") {
		t.Fatalf("duplicate: %v", err)
	}
	var m struct {
		MarkPullRequestReadyForReview struct {
			PullRequest struct{ IsDraft bool }
		} `graphql:"markPullRequestReadyForReview(input: $input)"`
	}
	if err := gql.Mutate(ctx, &m, githubv4.MarkPullRequestReadyForReviewInput{PullRequestID: githubv4.ID(pr.GetNodeID())}, nil); err != nil || m.MarkPullRequestReadyForReview.PullRequest.IsDraft {
		t.Fatalf("ready: %v %+v", err, m)
	}
	if got, _ := s.PR("org", "bundle", pr.GetNumber()); got.Draft {
		t.Fatal("still draft")
	}
	if err := gql.Mutate(ctx, &m, githubv4.MarkPullRequestReadyForReviewInput{PullRequestID: githubv4.ID("nope")}, nil); err == nil || !strings.Contains(err.Error(), "Could not resolve") {
		t.Fatalf("unknown node: %v", err)
	}
	// Held head: opened and ready_for_review started nothing.
	if n := s.CIBuilds("org", "bundle"); n != 0 {
		t.Fatalf("CI builds %d, want 0", n)
	}
	// A push without the marker is the one build; the description edit is none.
	push(t, gh, "cg", "final", false)
	if n := s.CIBuildsForPR("org", "bundle", pr.GetNumber()); n != 1 {
		t.Fatalf("CI builds %d, want 1", n)
	}
	// Non-forced non-fast-forward update is refused.
	if _, resp, _ := gh.Git.UpdateRef(ctx, "org", "bundle", "heads/cg", gogithub.UpdateRef{SHA: held}); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("non fast forward status %d", resp.StatusCode)
	}
	if err := s.MergePR("org", "bundle", pr.GetNumber()); err != nil {
		t.Fatal(err)
	}
	pr, _, _ = gh.PullRequests.Get(ctx, "org", "bundle", pr.GetNumber())
	if !pr.GetMerged() || pr.GetState() != "closed" {
		t.Fatalf("merged %v", pr)
	}
	if f, _ := s.FileAt("org", "bundle", "main", "Dockerfile"); f != "FROM y final\n" {
		t.Fatalf("main Dockerfile %q", f)
	}
}

func TestCICountingByPaCRules(t *testing.T) {
	s, gh, _ := setup(t)
	ctx := context.Background()
	push(t, gh, "cg", "first", true)
	pr, _, err := gh.PullRequests.Create(ctx, "org", "bundle", gogithub.CreatePullRequest{Title: new("t"), Head: "cg", Base: "main", Draft: new(true)})
	if err != nil {
		t.Fatal(err)
	}
	n := pr.GetNumber()
	steps := []struct {
		do   func()
		want int
	}{
		{func() {}, 1}, // opened without marker builds, even as a draft
		{func() { push(t, gh, "cg", "x [ci skip]", false) }, 1},
		{func() { push(t, gh, "cg", "x [SKIP CI]", false) }, 2}, // case-sensitive
		{func() { _ = s.EditBody("org", "bundle", n, "[skip ci] edited") }, 2},
		{func() { _ = s.MarkReady("org", "bundle", n) }, 3},
		{func() { _ = s.ClosePR("org", "bundle", n) }, 3},
		{func() {
			_, _, _ = gh.PullRequests.Edit(ctx, "org", "bundle", n, &gogithub.PullRequest{State: new("open")})
		}, 4},
		{func() {
			_, _ = s.HumanCommit("org", "bundle", "cg", User{Login: "dev", Name: "Dev", Email: "dev@example.com"}, map[string]string{"x": "y"}, "fix [tkn skip]")
		}, 4},
	}
	for i, st := range steps {
		st.do()
		if got := s.CIBuildsForPR("org", "bundle", n); got != st.want {
			t.Fatalf("step %d: CI builds %d, want %d (%+v)", i, got, st.want, s.CIEvents())
		}
	}
	if h, _ := s.Head("org", "bundle", "cg"); h.AuthorEmail != "dev@example.com" {
		t.Fatalf("human head %+v", h)
	}
	if s.Writes() == 0 {
		t.Fatal("writes not counted")
	}
}

func TestFailNextRateLimits(t *testing.T) {
	s, gh, _ := setup(t)
	ctx := context.Background()
	s.FailNext(1, http.StatusTooManyRequests, 7)
	_, _, err := gh.Repositories.Get(ctx, "org", "bundle")
	var rl *gogithub.RateLimitError
	if !errors.As(err, &rl) || rl.Response.Header.Get("Retry-After") != "7" {
		t.Fatalf("429: %v", err)
	}
	s.FailNext(1, http.StatusForbidden, 3)
	_, _, err = gh.Repositories.Get(ctx, "org", "bundle")
	var ab *gogithub.AbuseRateLimitError
	if !errors.As(err, &ab) || ab.RetryAfter == nil || *ab.RetryAfter != 3*time.Second {
		t.Fatalf("secondary: %v", err)
	}
	if _, _, err = gh.Repositories.Get(ctx, "org", "bundle"); err != nil {
		t.Fatalf("after failures: %v", err)
	}
}

func TestWebhooks(t *testing.T) {
	s, gh, _ := setup(t)
	got := make(chan *http.Request, 10)
	bodies := make(chan []byte, 10)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
		w.WriteHeader(http.StatusAccepted)
	}))
	defer hs.Close()
	s.AddWebhook(hs.URL, "s3cret")
	push(t, gh, "cg", "x [skip ci]", true)
	if _, _, err := gh.PullRequests.Create(context.Background(), "org", "bundle", gogithub.CreatePullRequest{Title: new("t"), Head: "cg", Base: "main", Draft: new(true)}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		b := <-bodies
		if r.Header.Get("X-GitHub-Event") != "pull_request" || r.Header.Get("X-GitHub-Delivery") == "" || r.Header.Get("X-Hub-Signature-256") != Sign("s3cret", b) {
			t.Fatalf("headers %v", r.Header)
		}
		for _, want := range []string{`"action":"opened"`, `"draft":true`, `"full_name":"org/bundle"`, `"ref":"cg"`, `"node_id"`} {
			if !strings.Contains(string(b), want) {
				t.Errorf("payload lacks %s: %s", want, b)
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook")
	}
}

// TestTreeOfADirectory reads a directory's tree by the SHA its parent lists, as a
// client walking the tree without recursive does.
func TestTreeOfADirectory(t *testing.T) {
	_, gh, _ := setup(t)
	ctx := context.Background()
	sha := push(t, gh, "feature", "bump", true)
	c, _, err := gh.Git.GetCommit(ctx, "org", "bundle", sha)
	if err != nil {
		t.Fatal(err)
	}
	walk := c.GetTree().GetSHA()
	for _, dir := range []string{"a", "b"} {
		tree, _, err := gh.Git.GetTree(ctx, "org", "bundle", walk, false)
		if err != nil {
			t.Fatalf("tree above %s: %v", dir, err)
		}
		walk = ""
		for _, e := range tree.Entries {
			if e.GetPath() == dir && e.GetType() == "tree" {
				walk = e.GetSHA()
			}
		}
		if walk == "" {
			t.Fatalf("no directory %s in %+v", dir, tree.Entries)
		}
	}
	tree, _, err := gh.Git.GetTree(ctx, "org", "bundle", walk, false)
	if err != nil || len(tree.Entries) != 1 || tree.Entries[0].GetPath() != "c.yaml" || tree.Entries[0].GetType() != "blob" {
		t.Fatalf("tree of a/b: %v %+v", err, tree)
	}
}

// A new tree may name a directory by its tree's SHA, as Renovate's platform-native
// commit lists the root's entries (`git ls-tree`): the directory is that tree,
// whatever the base tree had below it.
func TestCreateTreeWithADirectoryBySHA(t *testing.T) {
	s, gh, _ := setup(t)
	ctx := context.Background()
	main, _, err := gh.Git.GetRef(ctx, "org", "bundle", "heads/main")
	if err != nil {
		t.Fatal(err)
	}
	base, _, err := gh.Git.GetCommit(ctx, "org", "bundle", main.GetObject().GetSHA())
	if err != nil {
		t.Fatal(err)
	}
	root, _, err := gh.Git.GetTree(ctx, "org", "bundle", base.GetTree().GetSHA(), false)
	if err != nil {
		t.Fatal(err)
	}
	var entries []*gogithub.TreeEntry
	for _, e := range root.Entries {
		entries = append(entries, &gogithub.TreeEntry{Path: e.Path, Mode: e.Mode, Type: e.Type, SHA: e.SHA})
	}
	entries = append(entries, &gogithub.TreeEntry{Path: new("README.md"), Mode: new("100644"), Type: new("blob"), Content: new("hi\n")})
	tree, _, err := gh.Git.CreateTree(ctx, "org", "bundle", "", entries)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := gh.Git.CreateCommit(ctx, "org", "bundle", gogithub.Commit{Message: new("readme"), Tree: tree, Parents: []*gogithub.Commit{base}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"a/b/c.yaml": "k: v\n", "Dockerfile": "FROM x\n", "README.md": "hi\n"} {
		if got, ok := s.FileAt("org", "bundle", c.GetSHA(), path); !ok || got != want {
			t.Errorf("%s = %q (%v), want %q", path, got, ok, want)
		}
	}
	if _, _, err := gh.Git.CreateTree(ctx, "org", "bundle", "", []*gogithub.TreeEntry{
		{Path: new("a"), Mode: new("040000"), Type: new("tree"), SHA: new(strings.Repeat("0", 40))}}); err == nil {
		t.Error("a directory by an unknown tree SHA was accepted")
	}
}

// matching-refs lists the refs that start with a name, and none is an empty list.
func TestMatchingRefs(t *testing.T) {
	_, gh, _ := setup(t)
	ctx := context.Background()
	push(t, gh, "feature-1", "one", true)
	push(t, gh, "feature-2", "two", true)
	refs, _, err := gh.Git.ListMatchingRefs(ctx, "org", "bundle", "heads/feature")
	if err != nil || len(refs) != 2 || refs[0].GetRef() != "refs/heads/feature-1" || refs[1].GetRef() != "refs/heads/feature-2" {
		t.Fatalf("matching heads/feature: %v %+v", err, refs)
	}
	refs, _, err = gh.Git.ListMatchingRefs(ctx, "org", "bundle", "heads/nothing")
	if err != nil || len(refs) != 0 {
		t.Fatalf("matching heads/nothing: %v %+v", err, refs)
	}
}
