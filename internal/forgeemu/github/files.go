package github

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
)

// Changed files of a pull request, as GitHub's `GET /repos/{o}/{r}/pulls/{n}/files`
// lists them: the head's tree against the merge base of head and base (for a merged
// PR, the base as it was when it merged: the merge commit's first parent), sorted by
// path, paginated (per_page up to 100, default 30; a Link header names the next page;
// at most 3000 files, like GitHub). A rename is not detected (GitHub's similarity
// index is not emulated): it shows as a removal and an addition.

// mergeBase is the first ancestor of head (breadth first) that base reaches.
func (r *repo) mergeBase(base, head string) string {
	reach := map[string]bool{}
	for q := []string{base}; len(q) > 0; q = q[1:] {
		if c := r.commits[q[0]]; c != nil && !reach[q[0]] {
			reach[q[0]] = true
			q = append(q, c.Parents...)
		}
	}
	seen := map[string]bool{}
	for q := []string{head}; len(q) > 0; q = q[1:] {
		if reach[q[0]] {
			return q[0]
		}
		if c := r.commits[q[0]]; c != nil && !seen[q[0]] {
			seen[q[0]] = true
			q = append(q, c.Parents...)
		}
	}
	return ""
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
	perPage, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if perPage <= 0 || perPage > 100 {
		perPage = 30
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	if page < 1 {
		page = 1
	}
	all := rp.pullFiles(p)
	out := []map[string]any{}
	for i := (page - 1) * perPage; i < len(all) && i < page*perPage; i++ {
		f := all[i]
		out = append(out, map[string]any{"filename": f.path, "status": f.status,
			"raw_url": fmt.Sprintf("%s/%s/%s/raw/%s/%s", s.srv.URL, rp.owner, rp.name, p.HeadSHA, f.path)})
	}
	if page*perPage < len(all) {
		next := *r.URL
		q := next.Query()
		q.Set("page", strconv.Itoa(page+1))
		q.Set("per_page", strconv.Itoa(perPage))
		next.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, s.srv.URL, next.RequestURI()))
	}
	writeJSON(w, http.StatusOK, out)
}
