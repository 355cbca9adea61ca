package github

import (
	"fmt"
	"net/http"
)

// Changed files of a pull request, as GitHub's `GET /repos/{o}/{r}/pulls/{n}/files`
// lists them: the head's tree against the merge base of head and base (for a merged
// PR, the base as it was when it merged: the merge commit's first parent), sorted by
// path, paginated (per_page up to 100, default 30; a Link header names the next page;
// at most 3000 files, like GitHub). A rename is not detected (GitHub's similarity
// index is not emulated): it shows as a removal and an addition.

type changedFile struct{ path, status string }

// pullFiles diffs the PR's head against its merge base. Callers hold s.mu.
func (r *repo) pullFiles(p *pull) []changedFile {
	base := r.Branches[p.Base]
	if p.Merged {
		if m := r.Commits[p.MergeSHA]; m != nil && len(m.Parents) > 0 {
			base = m.Parents[0]
		}
	}
	var out []changedFile
	for _, c := range r.Diff(r.MergeBase(base, p.HeadSHA), p.HeadSHA) {
		switch {
		case c.Added:
			out = append(out, changedFile{c.Path, "added"})
		case c.Deleted:
			out = append(out, changedFile{c.Path, "removed"})
		case c.OldSHA != c.NewSHA:
			out = append(out, changedFile{c.Path, "modified"})
		default:
			// A change of mode alone is left out: GitHub's "changed" status is
			// not emulated.
		}
	}
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
			"raw_url": fmt.Sprintf("%s/%s/%s/raw/%s/%s", s.URL(), rp.owner, rp.name, p.HeadSHA, f.path)})
	}
	writeJSON(w, http.StatusOK, out)
}
