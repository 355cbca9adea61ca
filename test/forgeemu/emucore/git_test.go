package emucore

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitserve"
	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitstore"
)

// readOnlyForge has one public repository that anyone clones.
type readOnlyForge struct {
	mu   sync.Mutex
	repo *gitstore.Repo
}

func (f *readOnlyForge) Access(name, _ string) (gitserve.Access, bool) {
	if name != "org/app" {
		return gitserve.NoAccess, false
	}
	return gitserve.ReadAccess, true
}

func (f *readOnlyForge) WithRepo(name string, fn func(r *gitstore.Repo)) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if name != "org/app" {
		return false
	}
	fn(f.repo)
	return true
}

func (f *readOnlyForge) Pushed(string, string, []gitserve.RefUpdate) {}

func gitServer(t *testing.T) (*Git, *HTTP, *gitstore.Repo) {
	t.Helper()
	var clock int64
	store := gitstore.New("main", map[string]string{"Dockerfile": "FROM x\n"}, &clock, gitstore.Signature{Name: "Owner", Email: "o@example.com"})
	g := NewGit(&readOnlyForge{repo: store}, "emucore-test-git-")
	h := Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.Serve(w, r, func(w http.ResponseWriter, err error) {
			http.Error(w, "test forge: "+err.Error(), http.StatusInternalServerError)
		})
	}))
	return g, h, store
}

func TestGitServesFromADirectoryMadeOnDemand(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	g, h, store := gitServer(t)
	dirs := func() []string {
		d, _ := filepath.Glob(filepath.Join(tmp, "emucore-test-git-*"))
		return d
	}
	if d := dirs(); len(d) != 0 {
		t.Fatalf("a directory before any git request: %v", d)
	}
	work := t.TempDir()
	t.Setenv("HOME", work)
	t.Setenv("GIT_TERMINAL_PROMPT", "0")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	cmd := exec.Command("git", "clone", "-q", h.URL()+"/org/app.git", filepath.Join(work, "app"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	head, err := exec.Command("git", "-C", filepath.Join(work, "app"), "rev-parse", "HEAD").Output()
	if err != nil || strings.TrimSpace(string(head)) != store.Branches["main"] {
		t.Fatalf("cloned HEAD %q (%v), want %s", head, err, store.Branches["main"])
	}
	if d := dirs(); len(d) != 1 {
		t.Fatalf("repository directories after a clone: %v", d)
	}
	h.Close()
	g.Close()
	if d := dirs(); len(d) != 0 {
		t.Fatalf("Close left %v", d)
	}
}

func TestGitWithoutTheGitCLIFailsInTheForgesWords(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	g, h, _ := gitServer(t)
	t.Cleanup(g.Close)
	t.Cleanup(h.Close)
	r := call(t, http.MethodGet, h.URL()+"/org/app.git/info/refs?service=git-upload-pack")
	if r.code != http.StatusInternalServerError || !strings.Contains(r.body, "test forge: serving git: the git CLI is needed") {
		t.Fatalf("%d %q", r.code, r.body)
	}
}
