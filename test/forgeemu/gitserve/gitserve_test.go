package gitserve

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitstore"
)

// fakeForge is the least an emulator does: one lock around its stores, tokens with
// an access each, and pushes that move branches.
type fakeForge struct {
	mu     sync.Mutex
	repos  map[string]*gitstore.Repo
	tokens map[string]Access
	pushes [][]RefUpdate
	// userNameTokens: the forge takes the token as the user name (GitHub does).
	userNameTokens bool
}

func (f *fakeForge) TokenAsUserName() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.userNameTokens
}

func (f *fakeForge) Access(name, token string) (Access, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokens[token], f.repos[name] != nil
}

func (f *fakeForge) WithRepo(name string, fn func(r *gitstore.Repo)) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.repos[name]
	if r != nil {
		fn(r)
	}
	return r != nil
}

func (f *fakeForge) Pushed(name, _ string, updates []RefUpdate) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range updates {
		if u.New == "" {
			delete(f.repos[name].Branches, u.Branch)
		} else {
			f.repos[name].Branches[u.Branch] = u.New
		}
	}
	f.pushes = append(f.pushes, updates)
}

// TestCloneCommitPushFetch drives the server with the git CLI: a clone has the
// store's SHAs, a pushed branch lands in the store (tree, blobs, commit, under git's
// names) and reaches the forge, a commit the store makes reaches a fetch, and tokens
// decide who reads and who pushes.
func TestCloneCommitPushFetch(t *testing.T) {
	var clock int64
	sig := gitstore.Signature{Name: "Owner", Email: "owner@example.com"}
	store := gitstore.New("main", map[string]string{"Dockerfile": "FROM x\n", "deploy/base/app.yaml": "a: 1\n"}, &clock, sig)
	store.Subtrees = true
	forge := &fakeForge{repos: map[string]*gitstore.Repo{"org/app": store},
		tokens: map[string]Access{"rw": WriteAccess, "ro": ReadAccess}, userNameTokens: true}
	srv, err := New(forge, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	host := strings.TrimPrefix(hs.URL, "http://")
	work := t.TempDir()
	git := func(dir string, args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+work,
			"GIT_AUTHOR_NAME=Dev", "GIT_AUTHOR_EMAIL=dev@example.com", "GIT_COMMITTER_NAME=Dev", "GIT_COMMITTER_EMAIL=dev@example.com")
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	must := func(dir string, args ...string) string {
		t.Helper()
		out, err := git(dir, args...)
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return out
	}

	// Without a token, or with an unknown one, there is nothing to read (the fake's
	// repository is private: the empty token has no access).
	if out, err := git(work, "clone", "http://"+host+"/org/app.git", "anon"); err == nil || !strings.Contains(out, "could not read Username") {
		t.Fatalf("anonymous clone: %v %s", err, out)
	}
	if out, err := git(work, "clone", "http://x:nope@"+host+"/org/app.git", "bad"); err == nil {
		t.Fatalf("clone with an unknown token: %s", out)
	}

	clone := filepath.Join(work, "app")
	must(work, "clone", "-q", "http://x-access-token:rw@"+host+"/org/app.git", clone)
	head := store.Branches["main"]
	if got := must(clone, "rev-parse", "HEAD"); got != head {
		t.Fatalf("HEAD %s, the store's main %s", got, head)
	}
	if got := must(clone, "rev-parse", "HEAD^{tree}"); got != store.Commits[head].Tree {
		t.Fatalf("tree %s, the store's %s", got, store.Commits[head].Tree)
	}
	if got := must(clone, "rev-parse", "HEAD:deploy"); got != gitstore.SubtreeSHA(store.Trees[store.Commits[head].Tree], "deploy") {
		t.Fatalf("subtree deploy %s", got)
	}
	if got := must(clone, "fsck", "--strict"); strings.Contains(got, "error") {
		t.Fatalf("fsck: %s", got)
	}

	// A new branch with a commit in a new directory and an executable file.
	must(clone, "checkout", "-q", "-b", "feature")
	if err := os.MkdirAll(filepath.Join(clone, "deploy/overlay"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, "deploy/overlay/patch.yaml"), []byte("b: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, "run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	must(clone, "add", ".")
	must(clone, "commit", "-q", "-m", "overlay\n\nwith a body")
	pushed := must(clone, "rev-parse", "HEAD")

	// A read-only token may not push: 403, nothing moves.
	if out, err := git(clone, "push", "http://x:ro@"+host+"/org/app.git", "feature"); err == nil || !strings.Contains(out, "403") {
		t.Fatalf("push with a read-only token: %v %s", err, out)
	}
	// The token as user name without a password is anonymous on a forge that reads
	// only the password (GitLab): 401, so git asks for the password it was not given.
	forge.mu.Lock()
	forge.userNameTokens = false
	forge.mu.Unlock()
	if out, err := git(clone, "push", "http://rw@"+host+"/org/app.git", "feature"); err == nil || !strings.Contains(out, "could not read Password") {
		t.Fatalf("push with the token as user name on a forge that reads the password only: %v %s", err, out)
	}
	forge.mu.Lock()
	forge.userNameTokens = true
	forge.mu.Unlock()
	// Where the forge takes it (GitHub), as Renovate's github platform writes clone
	// URLs, it pushes (curl answers the 401 with the URL's credentials).
	must(clone, "push", "-q", "http://rw@"+host+"/org/app.git", "feature")
	forge.mu.Lock()
	if len(forge.pushes) != 1 || len(forge.pushes[0]) != 1 || forge.pushes[0][0] != (RefUpdate{Branch: "feature", New: pushed}) {
		t.Fatalf("pushes %+v", forge.pushes)
	}
	c := store.Commits[pushed]
	if c == nil || c.Message != "overlay\n\nwith a body\n" || c.Author.Email != "dev@example.com" || len(c.Parents) != 1 || c.Parents[0] != head {
		t.Fatalf("pushed commit in the store: %+v", c)
	}
	if e, ok := store.Lookup(c.Tree, "run.sh"); !ok || e.Mode != "100755" || string(store.Blobs[e.SHA]) != "#!/bin/sh\n" {
		t.Fatalf("run.sh: %+v %v", e, ok)
	}
	if e, ok := store.Lookup(c.Tree, "deploy/overlay/patch.yaml"); !ok || string(store.Blobs[e.SHA]) != "b: 2\n" {
		t.Fatalf("patch.yaml: %+v %v", e, ok)
	}
	// The pushed directory's tree is stored under git's name for it.
	if _, ok := store.Trees[must(clone, "rev-parse", "HEAD:deploy/overlay")]; !ok {
		t.Fatal("the subtree deploy/overlay is not stored under its git SHA")
	}
	// The store commits on the pushed branch, as a REST write would.
	next, err := store.CommitFiles(&clock, "feature", map[string]string{"deploy/base/app.yaml": "a: 2\n"}, "from the API", sig)
	if err != nil {
		t.Fatal(err)
	}
	store.Branches["feature"] = next.SHA
	forge.mu.Unlock()

	must(clone, "fetch", "-q", "origin")
	if got := must(clone, "rev-parse", "origin/feature"); got != next.SHA {
		t.Fatalf("fetched feature %s, the store's %s", got, next.SHA)
	}
	if got := must(clone, "show", "origin/feature:deploy/base/app.yaml"); got != "a: 2" {
		t.Fatalf("app.yaml at feature: %q", got)
	}
	// A fast-forward on top of the store's commit, and deleting the branch.
	must(clone, "merge", "-q", "--ff-only", "origin/feature")
	must(clone, "commit", "-q", "--allow-empty", "-m", "empty")
	must(clone, "push", "-q", "origin", "feature")
	must(clone, "push", "-q", "origin", "--delete", "feature")
	forge.mu.Lock()
	if len(forge.pushes) != 3 || forge.pushes[1][0].Old != next.SHA || forge.pushes[2][0].New != "" {
		t.Fatalf("pushes %+v", forge.pushes)
	}
	if _, ok := store.Branches["feature"]; ok {
		t.Fatal("feature survived its deletion")
	}
	forge.mu.Unlock()

	// Renovate's github platform pushes its commit to a ref outside refs/heads, then
	// names its blobs in git/trees: the objects are in the store, no branch moved.
	if err := os.WriteFile(filepath.Join(clone, "Dockerfile"), []byte("FROM y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(clone, "commit", "-q", "-am", "bump")
	renovated := must(clone, "rev-parse", "HEAD")
	blob := must(clone, "rev-parse", "HEAD:Dockerfile")
	must(clone, "push", "-q", "--force", "origin", renovated+":refs/renovate/branches/konflux/component-updates/x")
	forge.mu.Lock()
	defer forge.mu.Unlock()
	if len(forge.pushes) != 3 {
		t.Fatalf("a push outside refs/heads moved a branch: %+v", forge.pushes[3:])
	}
	if string(store.Blobs[blob]) != "FROM y\n" || store.Commits[renovated] == nil {
		t.Fatalf("the objects pushed to refs/renovate/... are not in the store (blob %v, commit %v)", store.Blobs[blob] != nil, store.Commits[renovated] != nil)
	}
}
