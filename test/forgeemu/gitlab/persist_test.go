package gitlab

import (
	"os"
	"reflect"
	"testing"
)

// TestStateWrittenBeforeEmucoreSavesAgainUnchanged loads a file the emulator wrote
// before its lifecycle, CI record and saved-state file came from emucore (a merge
// request made ready, labels, notes, a commit status, a CI run, a restricted
// project), serves it, and saves it again: the same bytes, so the file format is
// the one it was.
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
	mr, ok := s.MR("team", "app", 1)
	if !ok || mr.Draft || mr.Source != "nudge" || !reflect.DeepEqual(mr.Labels, []string{"konflux", "nudge"}) {
		t.Fatalf("MR !1 %+v", mr)
	}
	if got, ok := s.FileAt("team", "app", "nudge", "Dockerfile"); !ok || got != "FROM b\n" {
		t.Fatalf("Dockerfile on nudge: %q %v", got, ok)
	}
	if notes := s.Notes("team", "app", 1); !reflect.DeepEqual(notes, []string{"looks good"}) {
		t.Fatalf("notes %q", notes)
	}
	if n := s.CIBuilds("TEAM", "App"); n != 1 || len(s.CIEvents()) != 1 {
		t.Fatalf("CI runs: %d of %v", n, s.CIEvents())
	}
	// Save writes State (emucore.Save, tested there).
	if got, err := s.State(); err != nil || string(got) != string(want) {
		t.Fatalf("saved again, the state differs (%v):\n got %s\nwant %s", err, got, want)
	}
}
