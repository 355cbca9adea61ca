package gitstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The emulators persist their repositories, with the rest of their state, as one
// JSON document carrying a "version": `nudgeflow dev` writes it every few seconds
// and loads it on the next start.

// WriteFile writes b to path through a temporary file renamed over it, so that a
// crash mid-write leaves the previous state whole. what names the state in errors
// ("the GitLab emulator's state").
func WriteFile(path, what string, b []byte) error {
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

// ReadFile decodes the JSON document WriteFile wrote to path into v, after checking
// that its "version" is version. It reports false, and leaves v alone, when the
// file does not exist.
func ReadFile(path, what string, version int, v any) (bool, error) {
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
