package github

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
)

// stateVersion is bumped when the saved shape changes incompatibly.
const stateVersion = 1

// savedRepo is a repository as Save writes it.
type savedRepo struct {
	ID            int64              `json:"id"`
	Owner         string             `json:"owner"`
	Name          string             `json:"name"`
	DefaultBranch string             `json:"defaultBranch"`
	Refs          map[string]string  `json:"refs"`
	Blobs         map[string][]byte  `json:"blobs"`
	Trees         map[string][]entry `json:"trees"`
	Commits       map[string]*commit `json:"commits"`
	Pulls         []*pull            `json:"pulls"`
	NextNumber    int                `json:"nextNumber"`
	Comments      map[int][]*comment `json:"comments"`
}

// savedState is what Save writes: repositories, pull requests, comments and the CI
// events counted so far. Tokens and webhooks are configuration: the caller adds
// them again on every start.
type savedState struct {
	Version int         `json:"version"`
	NextID  int64       `json:"nextID"`
	Clock   int64       `json:"clock"`
	Repos   []savedRepo `json:"repos"`
	CI      []CIEvent   `json:"ci"`
}

// State returns the emulator's repositories, pull requests and CI events as JSON.
func (s *Server) State() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := savedState{Version: stateVersion, NextID: s.nextID, Clock: s.clock, CI: s.ci}
	for _, r := range s.repos {
		st.Repos = append(st.Repos, savedRepo{ID: r.id, Owner: r.owner, Name: r.name, DefaultBranch: r.defaultBranch,
			Refs: r.refs, Blobs: r.blobs, Trees: r.trees, Commits: r.commits, Pulls: r.pulls,
			NextNumber: r.nextNumber, Comments: r.comments})
	}
	sort.Slice(st.Repos, func(i, j int) bool { return st.Repos[i].ID < st.Repos[j].ID })
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encoding the emulator's state: %w", err)
	}
	return b, nil
}

// Save writes State to path atomically (a temporary file renamed over it).
func (s *Server) Save(path string) error {
	b, err := s.State()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".emulator-*.json")
	if err != nil {
		return fmt.Errorf("saving the emulator's state: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("saving the emulator's state to %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("saving the emulator's state to %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("saving the emulator's state: %w", err)
	}
	return nil
}

// Load replaces the emulator's repositories with those Save wrote to path. It
// reports false, and changes nothing, when the file does not exist.
func (s *Server) Load(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("loading the emulator's state: %w", err)
	}
	var st savedState
	if err := json.Unmarshal(b, &st); err != nil {
		return false, fmt.Errorf("loading the emulator's state from %s: %w", path, err)
	}
	if st.Version != stateVersion {
		return false, fmt.Errorf("loading the emulator's state from %s: version %d, want %d (delete the file to start afresh)", path, st.Version, stateVersion)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID, s.clock, s.ci = st.NextID, st.Clock, st.CI
	s.repos = map[string]*repo{}
	for _, sr := range st.Repos {
		r := &repo{id: sr.ID, owner: sr.Owner, name: sr.Name, defaultBranch: sr.DefaultBranch,
			refs: sr.Refs, blobs: sr.Blobs, trees: sr.Trees, commits: sr.Commits, pulls: sr.Pulls,
			nextNumber: sr.NextNumber, comments: sr.Comments}
		if r.refs == nil {
			r.refs = map[string]string{}
		}
		if r.blobs == nil {
			r.blobs = map[string][]byte{}
		}
		if r.trees == nil {
			r.trees = map[string][]entry{}
		}
		if r.commits == nil {
			r.commits = map[string]*commit{}
		}
		if r.comments == nil {
			r.comments = map[int][]*comment{}
		}
		s.repos[r.owner+"/"+r.name] = r
	}
	return true, nil
}

// HasRepo reports whether owner/name exists.
func (s *Server) HasRepo(owner, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.repos[owner+"/"+name] != nil
}

// mergePull is GitHub's PUT /repos/{owner}/{repo}/pulls/{number}/merge: a person
// with the token merges the PR (405 when it is not mergeable).
func (s *Server) mergePull(w http.ResponseWriter, r *http.Request, u User) {
	rp, p := s.pullOf(w, r)
	if p == nil {
		return
	}
	if p.State != "open" {
		writeError(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable")
		return
	}
	sha := s.merge(rp, p, signature{Name: u.Name, Email: u.Email})
	writeJSON(w, http.StatusOK, map[string]any{"sha": sha, "merged": true, "message": "Pull Request successfully merged"})
}
