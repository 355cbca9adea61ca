package gitstore

import (
	"os"
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

func TestWriteFileReadFile(t *testing.T) {
	type state struct {
		Version int   `json:"version"`
		Repo    *Repo `json:"repo"`
	}
	var clock int64
	path := filepath.Join(t.TempDir(), "state.json")
	r := New("main", map[string]string{"x": "y"}, &clock, Signature{Name: "a"})
	if err := WriteFile(path, "the test state", []byte(`{"version":2,"repo":{"defaultBranch":"main"}}`)); err != nil {
		t.Fatal(err)
	}
	var st state
	if ok, err := ReadFile(path, "the test state", 1, &st); ok || err == nil || !strings.Contains(err.Error(), "version 2, want 1") {
		t.Fatalf("another version: %v %v", ok, err)
	}
	if ok, err := ReadFile(filepath.Join(t.TempDir(), "missing.json"), "the test state", 1, &st); ok || err != nil {
		t.Fatalf("missing file: %v %v", ok, err)
	}
	b := []byte(`{"version":1,"repo":{"defaultBranch":"main","branches":{"main":"` + r.Branches["main"] + `"}}}`)
	if err := WriteFile(path, "the test state", b); err != nil {
		t.Fatal(err)
	}
	if ok, err := ReadFile(path, "the test state", 1, &st); !ok || err != nil || st.Repo.Branches["main"] != r.Branches["main"] {
		t.Fatalf("read back: %v %v %+v", ok, err, st.Repo)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".emulator-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
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
