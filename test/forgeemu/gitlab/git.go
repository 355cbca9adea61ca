package gitlab

import (
	"net/http"
	"strings"

	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitserve"
	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitstore"
)

// Git over smart HTTP at GitLab's clone URLs, http://host/<namespace>/<project>.git
// (http_url_to_repo), served by emucore.Git (the shared gitserve, bare
// repositories in a temporary directory made on the first git request and
// removed by Close) from the projects' stores. As
// on GitLab, the token is the basic-auth password with any user name (Renovate
// sends oauth2:<token>); a Reporter (ReadOnly) may clone but not push; an unknown
// token or none gets 401 (every project here is private). A push moves branches as
// the REST API does: the branch's open merge requests get the new head and an
// update (with oldrev) event, and a Push Hook goes to the hooks that asked for push
// events.

// gitForge is what gitserve needs of the emulator.
type gitForge struct{ s *Server }

func (g gitForge) Access(name, token string) (gitserve.Access, bool) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	exists := s.projects[strings.ToLower(name)] != nil
	u, ok := s.tokens.Lookup(token)
	switch {
	case !ok || !exists:
		return gitserve.NoAccess, exists
	case u.ReadOnly:
		return gitserve.ReadAccess, true
	default:
		return gitserve.WriteAccess, true
	}
}

func (g gitForge) WithRepo(name string, fn func(r *gitstore.Repo)) bool {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[strings.ToLower(name)]
	if p == nil {
		return false
	}
	fn(p.Repo)
	return true
}

func (g gitForge) Pushed(name, token string, updates []gitserve.RefUpdate) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[strings.ToLower(name)]
	if p == nil {
		return
	}
	u, _ := s.tokens.Lookup(token)
	for _, up := range updates {
		if up.New == "" {
			// GitLab keeps a deleted source branch's merge requests open (their
			// page says the source branch is gone); only the branch goes.
			delete(p.Repo.Branches, up.Branch)
			s.queuePushHook(p, up.Branch, up.Old, "", u)
			continue
		}
		s.moveBranch(p, up.Branch, up.New, u)
	}
}

// serveGit answers git's smart HTTP requests and hands the rest to next.
func (s *Server) serveGit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !gitserve.IsGitRequest(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if _, rest, _ := gitserve.Split(r.URL.Path); rest != "" {
			r.Pattern = r.Method + " /{namespace}/{project}.git/" + rest // for the call log
		}
		// Without git on PATH the emulator still serves its API; git requests get
		// 500 saying why.
		s.git.Serve(w, r, func(w http.ResponseWriter, err error) {
			http.Error(w, "GitLab emulator: "+err.Error(), http.StatusInternalServerError)
		})
	})
}

// GitURL is the clone URL of group/name (http_url_to_repo).
func (s *Server) GitURL(group, name string) string {
	return s.URL() + "/" + group + "/" + name + ".git"
}
