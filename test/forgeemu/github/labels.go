package github

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
)

// Labels, as GitHub's REST API has them: a repository's labels (name -> color) and
// the labels on a pull request (an issue). Adding a label an issue does not have
// creates it on the repository when it is missing, as GitHub does for a token that
// may push.

func (s *Server) labelRoutes(api func(pattern string, h func(w http.ResponseWriter, r *http.Request, u User))) {
	api("GET /repos/{owner}/{repo}/labels", s.listLabels)
	api("POST /repos/{owner}/{repo}/labels", s.createLabel)
	api("GET /repos/{owner}/{repo}/issues/{number}/labels", s.listIssueLabels)
	api("POST /repos/{owner}/{repo}/issues/{number}/labels", s.addIssueLabels)
	api("DELETE /repos/{owner}/{repo}/issues/{number}/labels/{name}", s.removeIssueLabel)
}

// CreateLabel creates a label on owner/name as a maintainer would.
func (s *Server) CreateLabel(owner, name, label, color string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repos[owner+"/"+name]
	if rp == nil {
		return fmt.Errorf("no repository %s/%s", owner, name)
	}
	if rp.labels == nil {
		rp.labels = map[string]string{}
	}
	rp.labels[label] = color
	return nil
}

func (s *Server) labelJSON(rp *repo, name string) map[string]any {
	return map[string]any{"id": int64(len(name)) + rp.id*1000, "node_id": "LA_" + name, "name": name, "color": rp.labels[name],
		"url": s.APIURL() + "repos/" + rp.owner + "/" + rp.name + "/labels/" + url.PathEscape(name), "default": false}
}

func (s *Server) labelsJSON(rp *repo, names []string) []map[string]any {
	out := []map[string]any{}
	for _, n := range names {
		out = append(out, s.labelJSON(rp, n))
	}
	return out
}

func (s *Server) listLabels(w http.ResponseWriter, r *http.Request, _ User) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return
	}
	names := make([]string, 0, len(rp.labels))
	for n := range rp.labels {
		names = append(names, n)
	}
	slices.Sort(names)
	from, to := s.page(w, r, len(names))
	writeJSON(w, http.StatusOK, s.labelsJSON(rp, names[from:to]))
}

func (s *Server) createLabel(w http.ResponseWriter, r *http.Request, _ User) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return
	}
	var in struct{ Name, Color string }
	if !decode(w, r, &in) {
		return
	}
	if in.Name == "" {
		unprocessable(w, "Validation Failed", map[string]any{"resource": "Label", "field": "name", "code": "missing_field"})
		return
	}
	if _, ok := rp.labels[in.Name]; ok {
		unprocessable(w, "Validation Failed", map[string]any{"resource": "Label", "field": "name", "code": "already_exists"})
		return
	}
	if rp.labels == nil {
		rp.labels = map[string]string{}
	}
	rp.labels[in.Name] = in.Color
	writeJSON(w, http.StatusCreated, s.labelJSON(rp, in.Name))
}

func (s *Server) listIssueLabels(w http.ResponseWriter, r *http.Request, _ User) {
	rp, p := s.pullOf(w, r)
	if p == nil {
		return
	}
	writeJSON(w, http.StatusOK, s.labelsJSON(rp, p.Labels))
}

// addIssueLabels takes {"labels": [...]} (or a bare array, which GitHub accepts too).
func (s *Server) addIssueLabels(w http.ResponseWriter, r *http.Request, u User) {
	rp, p := s.pullOf(w, r)
	if p == nil {
		return
	}
	var raw json.RawMessage
	if !decode(w, r, &raw) {
		return
	}
	var in struct{ Labels []string }
	if json.Unmarshal(raw, &in.Labels) != nil && json.Unmarshal(raw, &in) != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	for _, l := range in.Labels {
		if _, ok := rp.labels[l]; !ok {
			if rp.labels == nil {
				rp.labels = map[string]string{}
			}
			rp.labels[l] = "ededed" // GitHub's color for a label it creates
		}
		if !slices.Contains(p.Labels, l) {
			p.Labels = append(p.Labels, l)
			s.queueHook(rp, p, "labeled", u.Login)
		}
	}
	writeJSON(w, http.StatusOK, s.labelsJSON(rp, p.Labels))
}

func (s *Server) removeIssueLabel(w http.ResponseWriter, r *http.Request, u User) {
	rp, p := s.pullOf(w, r)
	if p == nil {
		return
	}
	name := r.PathValue("name")
	i := slices.Index(p.Labels, name)
	if i < 0 {
		writeError(w, http.StatusNotFound, "Label does not exist")
		return
	}
	p.Labels = slices.Delete(p.Labels, i, i+1)
	s.queueHook(rp, p, "unlabeled", u.Login)
	writeJSON(w, http.StatusOK, s.labelsJSON(rp, p.Labels))
}
