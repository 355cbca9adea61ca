package gitlab

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// Project labels and the labels of merge requests, as GitLab keeps them: a merge
// request carries label titles; `labels` on create and update (a comma-separated
// string or an array) replaces them, `add_labels` / `remove_labels` edit them, and
// a title the project lacks is created with GitLab's default colour
// (Labels::FindOrCreateService, as IssuableBaseService does for the API) — unlike
// Gitea, where Renovate's labels must exist first.

type label struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Color       string `json:"color"`
	Description string `json:"description,omitempty"`
}

// defaultLabelColor is GitLab's Label::DEFAULT_COLOR.
const defaultLabelColor = "#6699cc"

var labelColor = regexp.MustCompile(`^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)

// CreateLabel creates a project label as a maintainer does (a Konflux tenant
// creating the nudge label).
func (s *Server) CreateLabel(group, name, title, color string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[strings.ToLower(group+"/"+name)]
	if p == nil {
		return fmt.Errorf("no project %s/%s", group, name)
	}
	if p.label(title) != nil {
		return fmt.Errorf("label %q already exists on %s/%s", title, group, name)
	}
	s.newLabel(p, title, color, "")
	return nil
}

// Labels lists the titles of the project's labels.
func (s *Server) Labels(group, name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if p := s.projects[strings.ToLower(group+"/"+name)]; p != nil {
		for _, l := range p.Labels {
			out = append(out, l.Name)
		}
	}
	return out
}

// label finds a label by title; GitLab's titles are unique per project, case-sensitively.
func (p *project) label(title string) *label {
	for _, l := range p.Labels {
		if l.Name == title {
			return l
		}
	}
	return nil
}

func (s *Server) newLabel(p *project, title, color, description string) *label {
	s.nextID++
	l := &label{ID: s.nextID, Name: title, Color: color, Description: description}
	p.Labels = append(p.Labels, l)
	return l
}

func labelJSON(l *label) map[string]any {
	return map[string]any{"id": l.ID, "name": l.Name, "color": l.Color, "text_color": "#FFFFFF",
		"description": l.Description, "description_html": "", "open_issues_count": 0, "closed_issues_count": 0,
		"open_merge_requests_count": 0, "subscribed": false, "priority": nil, "is_project_label": true}
}

// listLabels is GET /projects/:id/labels.
func (s *Server) listLabels(w http.ResponseWriter, r *http.Request, _ User) {
	p := s.projectOf(w, r)
	if p == nil {
		return
	}
	all := []map[string]any{}
	for _, l := range p.Labels {
		all = append(all, labelJSON(l))
	}
	paginate(w, r, all)
}

// createLabel is POST /projects/:id/labels: 201, 400 for a missing name or color
// or a colour GitLab does not accept, 409 "Label already exists".
func (s *Server) createLabel(w http.ResponseWriter, r *http.Request, _ User) {
	p := s.projectOf(w, r)
	if p == nil {
		return
	}
	var in struct {
		Name        string `json:"name"`
		Color       string `json:"color"`
		Description string `json:"description"`
	}
	if !decode(w, r, &in) {
		return
	}
	switch {
	case in.Name == "":
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "name is missing"})
		return
	case in.Color == "":
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "color is missing"})
		return
	case !labelColor.MatchString(in.Color):
		writeMessage(w, http.StatusBadRequest, map[string]any{"color": []string{"must be a valid color code"}})
		return
	case p.label(in.Name) != nil:
		writeMessage(w, http.StatusConflict, "Label already exists")
		return
	}
	writeJSON(w, http.StatusCreated, labelJSON(s.newLabel(p, in.Name, in.Color, in.Description)))
}

// labelList is a `labels` parameter: GitLab takes a comma-separated string or an
// array of titles. Present tells an absent parameter from an empty one (which
// clears the labels).
type labelList struct {
	Titles  []string
	Present bool
}

func (l *labelList) UnmarshalJSON(b []byte) error {
	l.Present = true
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		l.Titles = splitLabels([]string{str})
		return nil
	}
	var arr []string
	if err := json.Unmarshal(b, &arr); err != nil {
		return fmt.Errorf("labels is neither a string nor an array of strings: %w", err)
	}
	l.Titles = splitLabels(arr)
	return nil
}

// splitLabels splits each entry at commas (an array entry may hold several, as
// GitLab's coercion does), trims and drops empties and repeats.
func splitLabels(in []string) []string {
	var out []string
	for _, e := range in {
		for t := range strings.SplitSeq(e, ",") {
			if t = strings.TrimSpace(t); t != "" && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// setLabels applies titles to m, creating the labels the project lacks; it
// returns whether the set changed. GitLab lists a merge request's labels by
// title. Callers hold s.mu.
func (s *Server) setLabels(p *project, m *mergeRequest, titles []string) (previous []string, changed bool) {
	for _, t := range titles {
		if p.label(t) == nil {
			s.newLabel(p, t, defaultLabelColor, "")
		}
	}
	next := append([]string(nil), titles...)
	slices.Sort(next)
	next = slices.Compact(next)
	previous = m.Labels
	if slices.Equal(previous, next) {
		return previous, false
	}
	m.Labels = next
	return previous, true
}

// labelChange is the `changes.labels` of a Merge Request Hook: the labels before
// and after, as objects.
func labelChange(p *project, previous, current []string) map[string]any {
	objs := func(titles []string) []map[string]any {
		out := []map[string]any{}
		for _, t := range titles {
			if l := p.label(t); l != nil {
				out = append(out, map[string]any{"id": l.ID, "title": l.Name, "color": l.Color, "type": "ProjectLabel"})
			}
		}
		return out
	}
	return map[string]any{"previous": objs(previous), "current": objs(current)}
}
