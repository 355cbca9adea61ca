package emucore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// An emulator persists its state as one JSON document: `nudgeflow dev` writes it
// every few seconds and loads it on the next start. The forge decides what the
// document holds; Saved is its head, and SaveFile/LoadFile the file.

// Saved is the head of every emulator's saved document: embed it first in the
// forge's state type, so that "version", "nextID" and "clock" lead the document
// as they always have.
type Saved struct {
	// Version is bumped by the forge when its saved shape changes incompatibly.
	Version int `json:"version"`
	// NextID and Clock are the emulator's ID sequence and logical clock.
	NextID int64 `json:"nextID"`
	Clock  int64 `json:"clock"`
}

// Encode is v as JSON; what names the state in the error ("the GitLab
// emulator's state").
func Encode(what string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", what, err)
	}
	return b, nil
}

// Save writes the document state returns to path (SaveFile): an emulator's Save
// is its State, written safely.
func Save(path, what string, state func() ([]byte, error)) error {
	b, err := state()
	if err != nil {
		return err
	}
	return SaveFile(path, what, b)
}

// SaveFile writes b to path through a temporary file renamed over it, so that a
// crash mid-write leaves the previous state whole. what names the state in errors.
func SaveFile(path, what string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".emulator-*.json")
	if err != nil {
		return fmt.Errorf("saving %s: %w", what, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("saving %s to %s: %w", what, tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("saving %s to %s: %w", what, tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("saving %s: %w", what, err)
	}
	return nil
}

// Load decodes the document SaveFile wrote to path into a new S and hands it to
// apply; it reports false, without calling apply, when the file does not exist.
func Load[S any](path, what string, version int, apply func(*S)) (bool, error) {
	var st S
	if ok, err := LoadFile(path, what, version, &st); !ok || err != nil {
		return false, err
	}
	apply(&st)
	return true, nil
}

// LoadFile decodes the JSON document SaveFile wrote to path into v, after
// checking that its "version" is version. It reports false, and leaves v alone,
// when the file does not exist.
func LoadFile(path, what string, version int, v any) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("loading %s: %w", what, err)
	}
	var head struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return false, fmt.Errorf("loading %s from %s: %w", what, path, err)
	}
	if head.Version != version {
		return false, fmt.Errorf("loading %s from %s: version %d, want %d (delete the file to start afresh)", what, path, head.Version, version)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("loading %s from %s: %w", what, path, err)
	}
	return true, nil
}
