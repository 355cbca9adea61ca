package emucore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitstore"
)

func TestSaveFileLoadFile(t *testing.T) {
	type state struct {
		Saved
		Repo *gitstore.Repo `json:"repo"`
	}
	var clock int64
	path := filepath.Join(t.TempDir(), "state.json")
	r := gitstore.New("main", map[string]string{"x": "y"}, &clock, gitstore.Signature{Name: "a"})
	if err := SaveFile(path, "the test state", []byte(`{"version":2,"repo":{"defaultBranch":"main"}}`)); err != nil {
		t.Fatal(err)
	}
	var st state
	if ok, err := LoadFile(path, "the test state", 1, &st); ok || err == nil || !strings.Contains(err.Error(), "version 2, want 1") {
		t.Fatalf("another version: %v %v", ok, err)
	}
	if ok, err := LoadFile(filepath.Join(t.TempDir(), "missing.json"), "the test state", 1, &st); ok || err != nil {
		t.Fatalf("missing file: %v %v", ok, err)
	}
	b, err := Encode("the test state", state{Saved: Saved{Version: 1, NextID: 7, Clock: clock}, Repo: r})
	if err != nil {
		t.Fatal(err)
	}
	// The head leads the document, as every saved file has it.
	if !strings.HasPrefix(string(b), `{"version":1,"nextID":7,"clock":`) {
		t.Fatalf("document starts %.60s", b)
	}
	if err := SaveFile(path, "the test state", b); err != nil {
		t.Fatal(err)
	}
	if ok, err := LoadFile(path, "the test state", 1, &st); !ok || err != nil || st.NextID != 7 || st.Repo.Branches["main"] != r.Branches["main"] {
		t.Fatalf("read back: %v %v %+v", ok, err, st)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".emulator-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if err := Save(path, "the test state", func() ([]byte, error) { return nil, errors.New("no state") }); err == nil || err.Error() != "no state" {
		t.Fatalf("a state that fails: %v", err)
	}
	if err := Save(path, "the test state", func() ([]byte, error) { return []byte(`{"version":1}`), nil }); err != nil {
		t.Fatal(err)
	}
	if ok, err := LoadFile(path, "the test state", 1, &st); !ok || err != nil {
		t.Fatalf("read back what Save wrote: %v %v", ok, err)
	}
	applied := 0
	if ok, err := Load(path, "the test state", 1, func(*state) { applied++ }); !ok || err != nil || applied != 1 {
		t.Fatalf("Load: %v %v, applied %d times", ok, err, applied)
	}
	if ok, err := Load(filepath.Join(t.TempDir(), "missing.json"), "the test state", 1, func(*state) { applied++ }); ok || err != nil || applied != 1 {
		t.Fatalf("Load of a missing file: %v %v, applied %d times", ok, err, applied)
	}
	if _, err := Encode("the test state", func() {}); err == nil || !strings.Contains(err.Error(), "encoding the test state") {
		t.Fatalf("unencodable state: %v", err)
	}
}
