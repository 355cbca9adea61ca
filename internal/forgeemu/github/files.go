package github

import (
	"fmt"
	"net/http"
	"sort"

	"github.com/nudgeflow/nudgeflow/internal/forgeemu/gitstore"
)

// Changed files of a pull request, as GitHub's `GET /repos/{o}/{r}/pulls/{n}/files`
// lists them: the head's tree against the merge base of head and base (for a merged
// PR, the base as it was when it merged: the merge commit's first parent), sorted by
// path, paginated (per_page up to 100, default 30; a Link header names the next page;
// at most 3000 files, like GitHub). A rename is not detected (GitHub's similarity
// index is not emulated): it shows as a removal and an addition.

// mergeBase is the first ancestor of head (breadth first) that base reaches.
func (r *repo) mergeBase(base, head string) string {
	return gitstore.MergeBase(base, head, func(sha string) ([]string, bool) {
		c := r.commits[sha]
		if c == nil {
			return nil, false
		}
		return c.Parents, true
	})
}

type changedFile struct{ path, status string }

// pullFiles diffs the PR's head against its merge base. Callers hold s.mu.
func (r *repo) pullFiles(p *pull) []changedFile {
	base := r.refs["heads/"+p.Base]
	if p.Merged {
		if m := r.commits[p.MergeSHA]; m != nil && len(m.Parents) > 0 {
			base = m.Parents[0]
		}
	}
	blobs := func(sha string) map[string]string {
		out := map[string]string{}
		if c := r.commits[sha]; c != nil {
			for _, e := range r.trees[c.Tree] {
				out[e.Path] = e.SHA
			}
		}
		return out
	}
	from, to := blobs(r.mergeBase(base, p.HeadSHA)), blobs(p.HeadSHA)
	var out []changedFile
	for path, sha := range to {
		switch old, ok := from[path]; {
		case !ok:
			out = append(out, changedFile{path, "added"})
		case old != sha:
			out = append(out, changedFile{path, "modified"})
		}
	}
	for path := range from {
		if _, ok := to[path]; !ok {
			out = append(out, changedFile{path, "removed"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	if len(out) > 3000 {
		out = out[:3000]
	}
	return out
}

func (s *Server) listPullFiles(w http.ResponseWriter, r *http.Request, _ User) {
	rp, p := s.pullOf(w, r)
	if p == nil {
		return
	}
	all := rp.pullFiles(p)
	from, to := s.page(w, r, len(all))
	out := []map[string]any{}
	for _, f := range all[from:to] {
		out = append(out, map[string]any{"filename": f.path, "status": f.status,
			"raw_url": fmt.Sprintf("%s/%s/%s/raw/%s/%s", s.srv.URL, rp.owner, rp.name, p.HeadSHA, f.path)})
	}
	writeJSON(w, http.StatusOK, out)
}
