package github

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestLoadsStateWrittenBeforeGitstore loads a file the emulator wrote before it
// kept its objects in gitstore (a `make run` home from then: capitalised keys in
// trees and commits, branches and a tag among the refs), serves it over REST, and
// saves it again without losing anything.
func TestLoadsStateWrittenBeforeGitstore(t *testing.T) {
	const old = "testdata/state-before-gitstore.json"
	s, gh, _ := setup(t)
	if ok, err := s.Load(old); !ok || err != nil {
		t.Fatalf("load: %v %v", ok, err)
	}
	ctx := context.Background()

	if ref, _, err := gh.Git.GetRef(ctx, "org", "bundle", "tags/v1"); err != nil || ref.GetObject().GetSHA() != "e35a95e03fadc7597c5f001ad5ca3d00a5e57847" {
		t.Fatalf("tag v1: %v %+v", err, ref)
	}
	head, ok := s.Head("org", "bundle", "scripts")
	if !ok || head.SHA != "7d6bfcb61a92630207d7a4960ae9ae4379bd565c" || head.Message != "mode" || len(head.Parents) != 1 {
		t.Fatalf("scripts head %+v", head)
	}
	if got, ok := s.FileAt("org", "bundle", "scripts", "bin/run.sh"); !ok || got != "#!/bin/sh\n" {
		t.Fatalf("bin/run.sh at scripts: %q %v", got, ok)
	}
	c, _, err := gh.Git.GetCommit(ctx, "org", "bundle", head.SHA)
	if err != nil || c.GetAuthor().GetEmail() != "bot@example.com" {
		t.Fatalf("commit: %v %+v", err, c)
	}
	tree, _, err := gh.Git.GetTree(ctx, "org", "bundle", c.GetTree().GetSHA(), false)
	if err != nil {
		t.Fatal(err)
	}
	var bin string
	for _, e := range tree.Entries {
		if e.GetPath() == "bin" && e.GetType() == "tree" {
			bin = e.GetSHA()
		}
	}
	// A directory's tree is read by its SHA: the subtrees were saved too.
	sub, _, err := gh.Git.GetTree(ctx, "org", "bundle", bin, false)
	if err != nil || len(sub.Entries) != 1 || sub.Entries[0].GetPath() != "run.sh" || sub.Entries[0].GetMode() != "100644" {
		t.Fatalf("subtree bin %s: %v %+v", bin, err, sub)
	}
	files, _, err := gh.PullRequests.ListFiles(ctx, "org", "bundle", 1, nil)
	if err != nil || len(files) != 2 || files[0].GetFilename() != "Dockerfile" || files[0].GetStatus() != "modified" ||
		files[1].GetFilename() != "x/y.txt" || files[1].GetStatus() != "added" {
		t.Fatalf("files of the merged PR #1: %v %+v", err, files)
	}
	if pr, ok := s.PR("org", "bundle", 1); !ok || !pr.Merged || s.MergeSHA("org", "bundle", 1) != "970d9c979dd4bc03a637a78b49dbe1419a042b06" {
		t.Fatalf("PR #1 %+v", pr)
	}
	if got := s.Comments("org", "bundle", 1); len(got) != 1 || got[0] != "hello" {
		t.Fatalf("comments %q", got)
	}
	// The next commit continues the loaded clock and numbering.
	if _, err := s.HumanCommit("org", "empty", "trunk", bot, map[string]string{"f": "x"}, "first"); err != nil {
		t.Fatal(err)
	}
	if n, _, err := s.OpenPR("org", "bundle", "next", "main", bot, map[string]string{"n": "n"}, "next"); err != nil || n != 4 {
		t.Fatalf("OpenPR: %d %v", n, err)
	}

	// Saved again, the file holds what the old one held, and more.
	path := filepath.Join(t.TempDir(), "emulator.json")
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	was, now := readState(t, old), readState(t, path)
	for i, r := range was.Repos {
		n := now.Repos[i]
		for name, sha := range r.Refs {
			if name != "heads/trunk" && n.Refs[name] != sha {
				t.Errorf("%s: ref %s is %s, was %s", r.Name, name, n.Refs[name], sha)
			}
		}
		for sha, b := range r.Blobs {
			if string(n.Blobs[sha]) != string(b) {
				t.Errorf("%s: blob %s changed", r.Name, sha)
			}
		}
		for sha, entries := range r.Trees {
			if got, ok := n.Trees[sha]; !ok || (len(entries) > 0 && !reflect.DeepEqual(got, entries)) {
				t.Errorf("%s: tree %s is %v, was %v", r.Name, sha, got, entries)
			}
		}
		for sha, c := range r.Commits {
			if !reflect.DeepEqual(n.Commits[sha], c) {
				t.Errorf("%s: commit %s is %+v, was %+v", r.Name, sha, n.Commits[sha], c)
			}
		}
		if !reflect.DeepEqual(n.Pulls[:len(r.Pulls)], r.Pulls) || !reflect.DeepEqual(n.Comments, r.Comments) {
			t.Errorf("%s: pull requests or comments changed", r.Name)
		}
	}
}

func readState(t *testing.T, path string) savedState {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st savedState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestStateWrittenBeforeEmucoreSavesAgainUnchanged loads a file the emulator wrote
// before its lifecycle, CI record and saved-state file came from emucore (a draft
// PR made ready, labels, a comment, the CI runs, a restricted App-reporting
// repository) and saves it again: the same bytes, so the file format is the one
// it was.
func TestStateWrittenBeforeEmucoreSavesAgainUnchanged(t *testing.T) {
	const old = "testdata/state-before-emucore.json"
	want, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	s := New()
	t.Cleanup(s.Close)
	if ok, err := s.Load(old); !ok || err != nil {
		t.Fatalf("load: %v %v", ok, err)
	}
	if pr, ok := s.PR("org", "app", 1); !ok || pr.Draft || pr.Head != "nudge" || !reflect.DeepEqual(pr.Labels, []string{"konflux", "nudge"}) {
		t.Fatalf("PR #1 %+v", pr)
	}
	if n := s.CIBuildsForPR("org", "app", 1); n != 2 {
		t.Fatalf("CI runs of PR #1: %d, want 2 (opened, ready_for_review)", n)
	}
	// Save writes State (emucore.Save, tested there).
	if got, err := s.State(); err != nil || string(got) != string(want) {
		t.Fatalf("saved again, the state differs (%v):\n got %s\nwant %s", err, got, want)
	}
}
