package github

import (
	"net/http"
	"sort"

	"github.com/nudgeflow/nudgeflow/internal/pac"
	"github.com/nudgeflow/nudgeflow/test/forgeemu/emucore"
	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitstore"
)

// stateVersion is bumped when the saved shape changes incompatibly.
const stateVersion = 1

// savedRepo is a repository as Save writes it. The store is saved flat, with
// branches among the refs as GitHub names them ("heads/main"), which is what files
// written before the emulator kept its objects in gitstore hold too: those load
// unchanged (their tree entries and commits have capitalised keys, which
// encoding/json matches case-insensitively).
type savedRepo struct {
	ID            int64                       `json:"id"`
	Owner         string                      `json:"owner"`
	Name          string                      `json:"name"`
	DefaultBranch string                      `json:"defaultBranch"`
	Refs          map[string]string           `json:"refs"`
	Blobs         map[string][]byte           `json:"blobs"`
	Trees         map[string][]gitstore.Entry `json:"trees"`
	Commits       map[string]*gitstore.Commit `json:"commits"`
	Pulls         []*pull                     `json:"pulls"`
	NextNumber    int                         `json:"nextNumber"`
	Comments      map[int][]*comment          `json:"comments"`
	// Statuses and Checks are what Pipelines as Code left on commits; ACL and PaCApp
	// how it treats the repository (files written before them load without).
	Statuses map[string][]*commitStatus `json:"statuses,omitempty"`
	Checks   map[string][]*checkRun     `json:"checks,omitempty"`
	ACL      pac.ACL                    `json:"acl,omitzero"`
	PaCApp   bool                       `json:"pacApp,omitempty"`
	Labels   map[string]string          `json:"labels,omitempty"`
}

// savedState is what Save writes (emucore's file, headed by its version, ID
// sequence and clock): repositories, pull requests, comments, what Pipelines as
// Code reported and the CI events counted so far. Tokens and webhooks are
// configuration: the caller adds them again on every start.
type savedState struct {
	emucore.Saved
	Repos []savedRepo `json:"repos"`
	CI    []CIEvent   `json:"ci"`
}

const stateName = "the emulator's state"

// State returns the emulator's repositories, pull requests and CI events as JSON.
func (s *Server) State() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := savedState{Saved: emucore.Saved{Version: stateVersion, NextID: s.nextID, Clock: s.clock}, CI: s.ci.Events()}
	for _, r := range s.repos {
		refs := make(map[string]string, len(r.Branches)+len(r.otherRefs))
		for name, sha := range r.otherRefs {
			refs[name] = sha
		}
		for branch, sha := range r.Branches {
			refs["heads/"+branch] = sha
		}
		st.Repos = append(st.Repos, savedRepo{ID: r.id, Owner: r.owner, Name: r.name, DefaultBranch: r.DefaultBranch,
			Refs: refs, Blobs: r.Blobs, Trees: r.Trees, Commits: r.Commits, Pulls: r.pulls,
			NextNumber: r.nextNumber, Comments: r.comments, Statuses: r.statuses, Checks: r.checks, ACL: r.acl, PaCApp: r.pacApp,
			Labels: r.labels})
	}
	sort.Slice(st.Repos, func(i, j int) bool { return st.Repos[i].ID < st.Repos[j].ID })
	return emucore.Encode(stateName, st)
}

// Save writes State to path atomically (a temporary file renamed over it).
func (s *Server) Save(path string) error { return emucore.Save(path, stateName, s.State) }

// Load replaces the emulator's repositories with those Save wrote to path. It
// reports false, and changes nothing, when the file does not exist.
func (s *Server) Load(path string) (bool, error) {
	return emucore.Load(path, stateName, stateVersion, s.restore)
}

// restore replaces the emulator's state with st.
func (s *Server) restore(st *savedState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID, s.clock = st.NextID, st.Clock
	s.ci.Replace(st.CI)
	s.repos = map[string]*repo{}
	for _, sr := range st.Repos {
		r := newRepo(sr.ID, sr.Owner, sr.Name, &gitstore.Repo{DefaultBranch: sr.DefaultBranch,
			Blobs: sr.Blobs, Trees: sr.Trees, Commits: sr.Commits})
		for name, sha := range sr.Refs {
			r.setRef(name, sha)
		}
		r.pulls, r.nextNumber = sr.Pulls, sr.NextNumber
		if sr.Comments != nil {
			r.comments = sr.Comments
		}
		if sr.Statuses != nil {
			r.statuses = sr.Statuses
		}
		if sr.Checks != nil {
			r.checks = sr.Checks
		}
		r.acl, r.pacApp, r.labels = sr.ACL, sr.PaCApp, sr.Labels
		s.repos[r.owner+"/"+r.name] = r
	}
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
	sha := s.merge(rp, p, s.CommitIdentity(u))
	writeJSON(w, http.StatusOK, map[string]any{"sha": sha, "merged": true, "message": "Pull Request successfully merged"})
}
