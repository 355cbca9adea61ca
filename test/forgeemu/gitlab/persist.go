package gitlab

import (
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/nudgeflow/nudgeflow/test/forgeemu/emucore"
)

// stateVersion is bumped when the saved shape changes incompatibly.
const stateVersion = 1

// stateName names the state in errors.
const stateName = "the GitLab emulator's state"

// savedState is what Save writes: emucore's file, headed by its version, ID
// sequence and clock, holding the projects and the CI events.
type savedState struct {
	emucore.Saved
	Projects []*project `json:"projects"`
	CI       []CIEvent  `json:"ci"`
}

// State returns the emulator's projects, merge requests, notes and CI events as
// JSON. Tokens and webhooks are configuration: the caller adds them on every start.
func (s *Server) State() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := savedState{Saved: emucore.Saved{Version: stateVersion, NextID: s.nextID, Clock: s.clock}, CI: s.ci.Events()}
	for _, p := range s.projects {
		st.Projects = append(st.Projects, p)
	}
	sort.Slice(st.Projects, func(i, j int) bool { return st.Projects[i].ID < st.Projects[j].ID })
	return emucore.Encode(stateName, st)
}

// Save writes State to path atomically.
func (s *Server) Save(path string) error { return emucore.Save(path, stateName, s.State) }

// Load replaces the emulator's projects with those Save wrote; false (and no
// change) when the file does not exist.
func (s *Server) Load(path string) (bool, error) {
	return emucore.Load(path, stateName, stateVersion, s.restore)
}

// restore replaces the emulator's state with st.
func (s *Server) restore(st *savedState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID, s.clock = st.NextID, st.Clock
	s.ci.Replace(st.CI)
	s.projects = map[string]*project{}
	for _, p := range st.Projects {
		if p.Repo == nil {
			continue
		}
		p.Repo.Init()
		if p.Notes == nil {
			p.Notes = map[int][]*note{}
		}
		s.projects[strings.ToLower(p.Path)] = p
	}
}

// ---- web pages: what a person looks at in `nudgeflow dev` ----

var pages = template.Must(template.New("").Parse(`
{{define "index"}}<!doctype html><title>GitLab emulator</title><h1>GitLab emulator</h1>
<p>API: <code>{{.API}}</code></p>
{{range .Projects}}<h2><a href="{{.URL}}">{{.Path}}</a></h2><p>pipelines Pipelines as Code would have started: {{.CI}}</p><ul>
{{range .MRs}}<li><a href="{{.WebURL}}">!{{.IID}}</a> {{.Title}} — {{.State}}{{if .Draft}} (draft){{end}}</li>{{end}}</ul>{{end}}
{{end}}
{{define "mr"}}<!doctype html><title>!{{.MR.IID}} {{.MR.Title}}</title><p><a href="/">all projects</a></p>
<h1>{{.MR.Title}} !{{.MR.IID}}</h1><p><span id="mr-state">{{if and .MR.Draft (eq .MR.State "opened")}}draft{{else}}{{.MR.State}}{{end}}</span> — {{.MR.Source}} → {{.MR.Target}} at {{.MR.SHA}}</p>
<p>pipelines Pipelines as Code would have started: <span id="ci-count">{{.CI}}</span></p>
<pre>{{.MR.Description}}</pre><h2>Activity</h2><ul>{{range .Notes}}<li>{{if .System}}<i>{{.Author}} {{.Body}}</i>{{else}}<b>{{.Author}}</b><pre>{{.Body}}</pre>{{end}}</li>{{end}}</ul>
{{end}}`))

func (s *Server) webRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		type proj struct {
			Path, URL string
			CI        int
			MRs       []MR
		}
		var ps []proj
		for _, p := range s.projects {
			pr := proj{Path: p.Path, URL: s.projectURL(p)}
			for _, m := range p.MRs {
				pr.MRs = append(pr.MRs, s.view(p, m))
			}
			pr.CI = s.ci.ForRepo(p.Path)
			ps = append(ps, pr)
		}
		s.mu.Unlock()
		sort.Slice(ps, func(i, j int) bool { return ps[i].Path < ps[j].Path })
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = pages.ExecuteTemplate(w, "index", map[string]any{"API": s.APIURL(), "Projects": ps})
	})
	mux.HandleFunc("/{path...}", func(w http.ResponseWriter, r *http.Request) {
		path := r.PathValue("path")
		proj, iid, ok := strings.Cut(path, "/-/merge_requests/")
		n, err := strconv.Atoi(iid)
		if !ok || err != nil {
			http.Redirect(w, r, "/", http.StatusFound)
			return
		}
		s.mu.Lock()
		p := s.projects[strings.ToLower(proj)]
		if p == nil || n < 1 || n > len(p.MRs) {
			s.mu.Unlock()
			http.NotFound(w, r)
			return
		}
		ci := s.ci.ForRequest(p.Path, n)
		data := map[string]any{"MR": s.view(p, p.MRs[n-1]), "Notes": append([]*note(nil), p.Notes[n]...), "CI": ci}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = pages.ExecuteTemplate(w, "mr", data)
	})
}
