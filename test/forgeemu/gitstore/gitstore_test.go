package gitstore

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestSubtreesEditTreeAndDiff(t *testing.T) {
	var clock int64
	sig := Signature{Name: "a", Email: "a@example.com"}
	for _, subtrees := range []bool{false, true} {
		r := &Repo{DefaultBranch: "main", Subtrees: subtrees}
		r.Init()
		base := r.WriteTree("", map[string]string{"a/b/c": "c", "a/d": "d", "e": "e"})
		// A directory's tree is stored under the SHA SubtreeSHA names only with Subtrees.
		sub := SubtreeSHA(r.Trees[base], "a")
		if got, ok := r.Trees[sub]; ok != subtrees || (ok && (len(got) != 2 || got[0].Path != "b/c" || got[1].Path != "d")) {
			t.Fatalf("Subtrees %v: tree of a: %v %v", subtrees, got, ok)
		}
		if _, ok := r.Trees[SubtreeSHA(r.Trees[base], "a/b")]; ok != subtrees {
			t.Fatalf("Subtrees %v: tree of a/b stored: %v", subtrees, ok)
		}
		from := r.NewCommit(&clock, base, nil, "base", sig, sig)
		tree := r.EditTree(base, []Edit{
			{Path: "a/d", Delete: true},
			{Path: "e", Mode: "100755", SHA: r.Trees[base][2].SHA},
			{Path: "f", Mode: "100644", SHA: r.PutBlob([]byte("f"))},
			{Path: "a/b/c", Mode: "100644", SHA: r.PutBlob([]byte("c2"))},
		})
		to := r.NewCommit(&clock, tree, []string{from.SHA}, "edit", sig, sig)
		var got []string
		for _, c := range r.Diff(from.SHA, to.SHA) {
			got = append(got, strings.Join([]string{c.Path, c.OldMode, c.NewMode, short(c.OldSHA), short(c.NewSHA)}, " "))
		}
		want := []string{
			"a/b/c 100644 100644 " + short(BlobSHA([]byte("c"))) + " " + short(BlobSHA([]byte("c2"))),
			"a/d 100644 0 " + short(BlobSHA([]byte("d"))) + " -",
			"e 100644 100755 " + short(BlobSHA([]byte("e"))) + " " + short(BlobSHA([]byte("e"))),
			"f 0 100644 - " + short(BlobSHA([]byte("f"))),
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if mb := r.MergeBase(from.SHA, to.SHA); mb != from.SHA {
			t.Fatalf("merge base %s, want %s", mb, from.SHA)
		}
	}
}

func short(sha string) string {
	if sha == "" {
		return "-"
	}
	return sha[:7]
}

func TestAncestorsAndMergeBase(t *testing.T) {
	var clock int64
	sig := Signature{Name: "a"}
	r := New("main", map[string]string{"x": "0"}, &clock, sig)
	a := r.Branches["main"]
	commit := func(parents ...string) string {
		return r.NewCommit(&clock, r.Commits[a].Tree, parents, "c", sig, sig).SHA
	}
	b, c := commit(a), commit(a)
	m := commit(b, c)
	if got := r.Ancestors(m); len(got) != 4 || !got[a] || !got[b] || !got[c] || !got[m] {
		t.Fatalf("ancestors of the merge: %v", got)
	}
	if got := r.Ancestors("missing"); len(got) != 0 {
		t.Fatalf("ancestors of a missing commit: %v", got)
	}
	for _, tc := range []struct{ base, head, want string }{{b, c, a}, {m, c, c}, {c, m, c}, {a, "missing", ""}} {
		if got := r.MergeBase(tc.base, tc.head); got != tc.want {
			t.Errorf("MergeBase(%.7s, %.7s) = %.7s, want %.7s", tc.base, tc.head, got, tc.want)
		}
	}
}

// TestSHAsAreGits checks the store's tree and commit names against the git CLI on
// the same content: git's tree order (a directory sorts as name+"/", after "a-b" and
// "a.b", before "a0"), modes, nesting, and a commit's dates.
func TestSHAsAreGits(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("the git CLI is needed: %v", err)
	}
	files := map[string]string{"a-b": "1", "a.b": "2", "a/c": "3", "a/d/e": "4", "a0": "5", "z": "6"}
	dir := t.TempDir()
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run(nil, "init", "-q")
	for p, c := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "z"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(nil, "add", ".")
	wantTree := run(nil, "write-tree")

	var clock int64
	r := &Repo{DefaultBranch: "main", Subtrees: true}
	r.Init()
	tree := r.WriteTree("", files)
	tree = r.EditTree(tree, []Edit{{Path: "z", Mode: "100755", SHA: BlobSHA([]byte("6"))}})
	if tree != wantTree {
		t.Fatalf("tree %s, git's %s", tree, wantTree)
	}
	if sub, want := SubtreeSHA(r.Trees[tree], "a"), run(nil, "rev-parse", wantTree+":a"); sub != want {
		t.Fatalf("subtree a %s, git's %s", sub, want)
	}
	if _, ok := r.Trees[run(nil, "rev-parse", wantTree+":a/d")]; !ok {
		t.Fatalf("the tree of a/d is not stored under git's SHA")
	}
	sig := Signature{Name: "A U Thor", Email: "a@example.com"}
	c := r.NewCommit(&clock, tree, nil, "first\n\nbody\n", sig, sig)
	env := []string{"GIT_AUTHOR_NAME=A U Thor", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_AUTHOR_DATE=1700000001 +0000",
		"GIT_COMMITTER_NAME=A U Thor", "GIT_COMMITTER_EMAIL=a@example.com", "GIT_COMMITTER_DATE=1700000001 +0000"}
	cmd := exec.Command(git, "commit-tree", tree)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, append(os.Environ(), env...), strings.NewReader("first\n\nbody\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git commit-tree: %v", err)
	}
	if want := strings.TrimSpace(string(out)); c.SHA != want {
		t.Fatalf("commit %s, git's %s", c.SHA, want)
	}
	// A commit read back from git's object (a zone other than UTC included) keeps its name.
	env[2], env[5] = "GIT_AUTHOR_DATE=1700000001 +0530", "GIT_COMMITTER_DATE=1700000002 -0100"
	cmd = exec.Command(git, "commit-tree", tree, "-p", c.SHA)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, append(os.Environ(), env...), strings.NewReader("second")
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("git commit-tree: %v", err)
	}
	sha := strings.TrimSpace(string(out))
	cmd = exec.Command(git, "cat-file", "commit", sha)
	cmd.Dir = dir
	body, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cat-file: %v", err)
	}
	parsed, err := ParseCommit(sha, body)
	if err != nil {
		t.Fatal(err)
	}
	if parsed.Tree != tree || len(parsed.Parents) != 1 || parsed.Parents[0] != c.SHA || parsed.Author.Date != "2023-11-15T03:43:21+05:30" {
		t.Fatalf("parsed %+v", parsed)
	}
}

func TestFileAtAndHead(t *testing.T) {
	var clock int64
	sig := Signature{Name: "a"}
	r := New("main", map[string]string{"dir/f": "one"}, &clock, sig)
	first := r.Branches["main"]
	c, err := r.CommitFiles(&clock, "main", map[string]string{"dir/f": "two"}, "second", sig)
	if err != nil {
		t.Fatal(err)
	}
	r.Branches["main"] = c.SHA // CommitFiles leaves moving the branch to the forge
	if got, ok := r.FileAt("main", "dir/f"); !ok || got != "two" {
		t.Fatalf("at main: %q %v", got, ok)
	}
	if got, ok := r.FileAt(first, "dir/f"); !ok || got != "one" {
		t.Fatalf("at the first commit: %q %v", got, ok)
	}
	if _, ok := r.FileAt("main", "missing"); ok {
		t.Fatal("a missing path is there")
	}
	if _, ok := r.FileAt("nope", "dir/f"); ok {
		t.Fatal("a missing ref resolves")
	}
	if h, ok := r.Head("main"); !ok || h.SHA != c.SHA || h.Message != "second" {
		t.Fatalf("head %+v %v", h, ok)
	}
	if _, ok := r.Head("nope"); ok {
		t.Fatal("a missing branch has a head")
	}
}
