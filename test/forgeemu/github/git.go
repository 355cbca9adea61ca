package github

import (
	"net/http"
	"strings"

	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitserve"
	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitstore"
)

// Git over smart HTTP at GitHub's clone URLs, URL()/owner/name.git: emucore.Git
// serves it (package gitserve, bare repositories in a temporary directory made on
// the first git request and removed by Close); this file routes to it and says
// who may do what (gitForge).

// CloneURL is the repository's git URL, as clone_url in the REST API gives it.
func (s *Server) CloneURL(owner, name string) string {
	return s.URL() + "/" + owner + "/" + name + ".git"
}

func (s *Server) gitRoutes(mux *http.ServeMux) {
	h := func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.PathValue("repo"), ".git") {
			writeError(w, http.StatusNotFound, "Not Found")
			return
		}
		s.git.Serve(w, r, func(w http.ResponseWriter, err error) {
			writeError(w, http.StatusInternalServerError, err.Error())
		})
	}
	mux.HandleFunc("GET /{owner}/{repo}/info/refs", h)
	mux.HandleFunc("POST /{owner}/{repo}/git-upload-pack", h)
	mux.HandleFunc("POST /{owner}/{repo}/git-receive-pack", h)
}

// gitForge is the emulator as package gitserve sees it.
type gitForge struct{ s *Server }

// Access: repositories are public, so anyone reads; a token the API accepts (and,
// for an installation token, scoped to the repository, not expired, with contents:
// write) pushes; an unknown token is refused, as GitHub refuses bad credentials
// even on a public repository.
func (f gitForge) Access(name, token string) (gitserve.Access, bool) {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repos[name]
	if token == "" {
		if rp == nil {
			return gitserve.NoAccess, false
		}
		return gitserve.ReadAccess, true
	}
	if _, ok := s.tokens.Lookup(token); !ok || rp == nil || s.tokenExpired(token) || !s.scopeAllows(token, rp) {
		return gitserve.NoAccess, rp != nil
	}
	// An installation token pushes with contents: write, fetches with read.
	switch {
	case s.permits(token, "contents:write"):
		return gitserve.WriteAccess, true
	case s.permits(token, "contents:read"):
		return gitserve.ReadAccess, true
	}
	return gitserve.NoAccess, true
}

// TokenAsUserName: GitHub takes https://<token>@host/… (Renovate's github platform
// clones so).
func (gitForge) TokenAsUserName() bool { return true }

func (f gitForge) WithRepo(name string, fn func(r *gitstore.Repo)) bool {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	rp := f.s.repos[name]
	if rp != nil {
		fn(rp.Repo)
	}
	return rp != nil
}

// Pushed moves the branches as the REST refs API does: push events, synchronize
// for a pull request whose head branch moved; a deleted branch is gone.
func (f gitForge) Pushed(name, token string, updates []gitserve.RefUpdate) {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repos[name]
	if rp == nil {
		return
	}
	pusher, _ := s.tokens.Lookup(token)
	sender := pusher.Login
	for _, u := range updates {
		if u.New == "" {
			s.pushEvent(rp, u.Branch, rp.Branches[u.Branch], "", sender)
			delete(rp.Branches, u.Branch)
			continue
		}
		s.moveBranch(rp, u.Branch, u.New, sender)
	}
}
