package gitlab

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Issues, as far as Renovate's gitlab platform uses them: at the end of every run
// it lists its own open issues (ensureIssueClosing of the config-error issue) and
// it may open, read, edit and close one (the config-error issue, the dependency
// dashboard). Issues have their own iid sequence, as on GitLab.

type issue struct {
	ID           int64     `json:"id"`
	IID          int       `json:"iid"`
	Title        string    `json:"title"`
	Description  string    `json:"description"`
	State        string    `json:"state"` // opened, closed
	Author       string    `json:"author"`
	Labels       []string  `json:"labels,omitempty"`
	Confidential bool      `json:"confidential,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
}

// Issue is an issue as tests see it.
type Issue struct {
	IID                  int
	Title, Description   string
	State, Author        string
	Labels               []string
	Confidential, Closed bool
}

// Issues lists the project's issues by iid.
func (s *Server) Issues(group, name string) []Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Issue
	if p := s.projects[strings.ToLower(group+"/"+name)]; p != nil {
		for _, i := range p.Issues {
			out = append(out, Issue{IID: i.IID, Title: i.Title, Description: i.Description, State: i.State, Author: i.Author,
				Labels: append([]string(nil), i.Labels...), Confidential: i.Confidential, Closed: i.State == "closed"})
		}
	}
	return out
}

func (s *Server) issueJSON(p *project, i *issue) map[string]any {
	return map[string]any{"id": i.ID, "iid": i.IID, "project_id": p.ID, "title": i.Title, "description": i.Description,
		"state": i.State, "labels": append([]string{}, i.Labels...), "confidential": i.Confidential,
		"author": map[string]any{"username": i.Author}, "assignees": []any{}, "assignee": nil,
		"created_at": i.CreatedAt.Format(time.RFC3339), "web_url": fmt.Sprintf("%s/-/issues/%d", s.projectURL(p), i.IID),
		"references": map[string]any{"full": fmt.Sprintf("%s#%d", p.Path, i.IID)}}
}

func (s *Server) issueOf(w http.ResponseWriter, r *http.Request) (*project, *issue) {
	return itemOf(s, w, r, func(p *project) []*issue { return p.Issues }, "Issue")
}

// issueLabels sets an issue's labels as GitLab does a merge request's (missing
// ones created). Callers hold s.mu.
func (s *Server) issueLabels(p *project, i *issue, titles []string) {
	for _, t := range titles {
		if p.label(t) == nil {
			s.newLabel(p, t, defaultLabelColor, "")
		}
	}
	i.Labels = slices.Compact(slices.Sorted(slices.Values(titles)))
}

// listIssues is GET /projects/:id/issues: state, scope (created_by_me, all) and
// author_username filter; newest first.
func (s *Server) listIssues(w http.ResponseWriter, r *http.Request, u User) {
	p := s.projectOf(w, r)
	if p == nil {
		return
	}
	q := r.URL.Query()
	state, author := q.Get("state"), q.Get("author_username")
	switch q.Get("scope") {
	case "", "all":
	case "created_by_me":
		author = u.Username
	case "assigned_to_me":
		paginate(w, r, []map[string]any{})
		return
	default:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "scope does not have a valid value"})
		return
	}
	all := []map[string]any{}
	for k := len(p.Issues) - 1; k >= 0; k-- {
		i := p.Issues[k]
		if (state != "" && state != "all" && state != i.State) || (author != "" && author != i.Author) {
			continue
		}
		all = append(all, s.issueJSON(p, i))
	}
	paginate(w, r, all)
}

func (s *Server) getIssue(w http.ResponseWriter, r *http.Request, _ User) {
	if p, i := s.issueOf(w, r); i != nil {
		writeJSON(w, http.StatusOK, s.issueJSON(p, i))
	}
}

// createIssue is POST /projects/:id/issues: title (required), description,
// labels, confidential.
func (s *Server) createIssue(w http.ResponseWriter, r *http.Request, u User) {
	p := s.projectOf(w, r)
	if p == nil {
		return
	}
	var in struct {
		Title        string    `json:"title"`
		Description  string    `json:"description"`
		Labels       labelList `json:"labels"`
		Confidential bool      `json:"confidential"`
	}
	if !decode(w, r, &in) {
		return
	}
	if in.Title == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "title is missing"})
		return
	}
	s.nextID++
	i := &issue{ID: s.nextID, IID: len(p.Issues) + 1, Title: in.Title, Description: in.Description, State: "opened",
		Author: u.Username, Confidential: in.Confidential, CreatedAt: time.Unix(1700000000+s.clock, 0).UTC()}
	s.issueLabels(p, i, in.Labels.Titles)
	p.Issues = append(p.Issues, i)
	writeJSON(w, http.StatusCreated, s.issueJSON(p, i))
}

// updateIssue is PUT /projects/:id/issues/:iid: title, description, labels,
// confidential, state_event (close, reopen).
func (s *Server) updateIssue(w http.ResponseWriter, r *http.Request, _ User) {
	p, i := s.issueOf(w, r)
	if i == nil {
		return
	}
	var in struct {
		Title        *string   `json:"title"`
		Description  *string   `json:"description"`
		Labels       labelList `json:"labels"`
		Confidential *bool     `json:"confidential"`
		StateEvent   *string   `json:"state_event"`
	}
	if !decode(w, r, &in) {
		return
	}
	if in.StateEvent != nil && *in.StateEvent != "close" && *in.StateEvent != "reopen" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "state_event does not have a valid value"})
		return
	}
	if in.Title != nil {
		if *in.Title == "" {
			writeMessage(w, http.StatusBadRequest, map[string]any{"title": []string{"can't be blank"}})
			return
		}
		i.Title = *in.Title
	}
	if in.Description != nil {
		i.Description = *in.Description
	}
	if in.Labels.Present {
		s.issueLabels(p, i, in.Labels.Titles)
	}
	if in.Confidential != nil {
		i.Confidential = *in.Confidential
	}
	if in.StateEvent != nil {
		i.State = map[string]string{"close": "closed", "reopen": "opened"}[*in.StateEvent]
	}
	writeJSON(w, http.StatusOK, s.issueJSON(p, i))
}
