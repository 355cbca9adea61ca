package gitlab

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nudgeflow/nudgeflow/internal/pac"
)

// What Pipelines as Code leaves on commits, and the REST reads of it: PaC reports
// on GitLab with commit statuses (pkg/provider/gitlab/gitlab.go CreateStatus), which
// GitLab gathers in an "external" pipeline of the commit. The decision which event
// runs or waits for approval is package pac's; this file writes its outcome as
// PaC's GitLab provider does.

// commitStatus is one commit status (POST /projects/:id/statuses/:sha).
type commitStatus struct {
	ID          int64  `json:"id"`
	Status      string `json:"status"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Ref         string `json:"ref,omitempty"`
	Author      string `json:"author,omitempty"`
	At          int64  `json:"at"`
	PipelineID  int64  `json:"pipelineID"`
	TargetURL   string `json:"targetURL,omitempty"`
}

func (st *commitStatus) targetURL() any {
	if st.TargetURL == "" {
		return nil
	}
	return st.TargetURL
}

// pacUser is the username PaC's token writes as.
const pacUser = "pipelines-as-code"

// RestrictCI makes Pipelines as Code enforce its ACL on the project: only the
// trusted usernames (project members, inherited ones too, and people in OWNERS)
// run CI; another author's merge request waits for an `/ok-to-test` note from one
// of them. Without it every author is trusted.
func (s *Server) RestrictCI(group, name string, trusted ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.projects[strings.ToLower(group+"/"+name)]; p != nil {
		p.ACL = pac.ACL{Enforced: true, Trusted: append([]string(nil), trusted...)}
	}
}

// NoteAs comments on a merge request as a person does in the web UI; an
// `/ok-to-test` from a trusted person starts the pipeline PaC held.
func (s *Server) NoteAs(group, name string, iid int, u User, body string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, m, err := s.openMR(group, name, iid)
	if err != nil {
		return err
	}
	s.userNote(p, m, body, u)
	return nil
}

// userNote adds a person's note and lets PaC read it. Callers hold s.mu.
func (s *Server) userNote(p *project, m *mergeRequest, body string, u User) *note {
	n := s.addNote(p, m.IID, body, u.Username, false)
	if m.State == "opened" && pac.OkToTestRuns(body, p.ACL, u.Username, s.ranFor(p, m.SHA)) {
		s.pacRun(p, m, "ok-to-test")
	}
	return n
}

// ranFor reports whether a pipeline ran for sha. Callers hold s.mu.
func (s *Server) ranFor(p *project, sha string) bool {
	return s.ci.RanFor(p.Path, sha)
}

// pacEvent is PaC receiving a Merge Request Hook. Callers hold s.mu.
func (s *Server) pacEvent(p *project, m *mergeRequest, action, oldrev string, u User) {
	c := p.Repo.Commits[m.SHA]
	if c == nil {
		return
	}
	switch pac.Decide(pac.Event{Builds: pac.GitLabBuilds(action, oldrev), HeadMessage: c.Message, Sender: u.Username}, p.ACL) {
	case pac.Run:
		s.pacRun(p, m, action)
	case pac.AwaitApproval:
		// A running status titled as the wait: PaC maps its pending conclusion to
		// GitLab's "running" (CreateStatus).
		s.setStatus(p, m, "running", pac.PendingApprovalTitle, pac.ApplicationName, pacUser)
	}
}

// pacRun starts the pipeline run: a CI event and its running status. An approval
// first marks the waiting status successful (PaC's "Approved", which GitLab's
// provider words as a success). Callers hold s.mu.
func (s *Server) pacRun(p *project, m *mergeRequest, action string) {
	s.ci.Record(CIEvent{Project: p.Path, IID: m.IID, Action: action, HeadSHA: m.SHA})
	if action == "ok-to-test" {
		s.setStatus(p, m, "success", "successfully validated your commit", pac.ApplicationName, pacUser)
	}
	_, name, _ := cutLast(p.Path)
	s.setStatus(p, m, "running", "", pac.RunName(pac.PipelineRun(name)), pacUser)
}

// setStatus adds a commit status to the merge request's head, in the commit's one
// external pipeline. Callers hold s.mu.
func (s *Server) setStatus(p *project, m *mergeRequest, status, description, name, author string) *commitStatus {
	return s.addStatus(p, m.SHA, m.Source, status, description, name, author)
}

func (s *Server) addStatus(p *project, sha, ref, status, description, name, author string) *commitStatus {
	if p.Statuses == nil {
		p.Statuses = map[string][]*commitStatus{}
	}
	pipeline := int64(0)
	if prev := p.Statuses[sha]; len(prev) > 0 {
		pipeline = prev[0].PipelineID
	} else {
		s.nextID++
		pipeline = s.nextID
	}
	s.nextID++
	s.clock++
	st := &commitStatus{ID: s.nextID, Status: status, Name: name, Description: description, Ref: ref, Author: author,
		At: s.clock, PipelineID: pipeline}
	p.Statuses[sha] = append(p.Statuses[sha], st)
	return st
}

func (s *Server) statusJSON(sha string, st *commitStatus) map[string]any {
	at := time.Unix(1700000000+st.At, 0).UTC().Format(time.RFC3339)
	return map[string]any{"id": st.ID, "sha": sha, "ref": st.Ref, "status": st.Status, "name": st.Name,
		"description": st.Description, "target_url": st.targetURL(), "created_at": at, "started_at": at, "finished_at": nil,
		"allow_failure": false, "coverage": nil, "pipeline_id": st.PipelineID, "author": map[string]any{"username": st.Author}}
}

// createStatus is POST /projects/:id/statuses/:sha (state, name or context,
// description, ref), the endpoint PaC writes with.
func (s *Server) createStatus(w http.ResponseWriter, r *http.Request, u User) {
	p := s.projectOf(w, r)
	if p == nil {
		return
	}
	sha := r.PathValue("sha")
	if p.Repo.Commits[sha] == nil {
		notFound(w, "Commit")
		return
	}
	var in struct {
		State       string `json:"state"`
		Name        string `json:"name"`
		Context     string `json:"context"`
		Description string `json:"description"`
		Ref         string `json:"ref"`
		TargetURL   string `json:"target_url"`
	}
	if !decode(w, r, &in) {
		return
	}
	switch in.State {
	case "pending", "running", "success", "failed", "canceled", "skipped":
	default:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "state does not have a valid value"})
		return
	}
	name := in.Name
	if name == "" {
		name = in.Context
	}
	if name == "" {
		name = "default"
	}
	st := s.addStatus(p, sha, in.Ref, in.State, in.Description, name, u.Username)
	st.TargetURL = in.TargetURL
	s.autoMerge(p, sha)
	writeJSON(w, http.StatusCreated, s.statusJSON(sha, st))
}

// listStatuses is GET /projects/:id/repository/commits/:sha/statuses: the newest
// status of each name unless all=true, paginated.
func (s *Server) listStatuses(w http.ResponseWriter, r *http.Request, _ User) {
	p := s.projectOf(w, r)
	if p == nil {
		return
	}
	c := p.Repo.Resolve(r.PathValue("sha"))
	if c == nil {
		notFound(w, "Commit")
		return
	}
	all := r.URL.Query().Get("all") == "true"
	seen := map[string]bool{}
	out := []map[string]any{}
	list := p.Statuses[c.SHA]
	for i := len(list) - 1; i >= 0; i-- {
		if all || !seen[list[i].Name] {
			seen[list[i].Name] = true
			out = append(out, s.statusJSON(c.SHA, list[i]))
		}
	}
	paginate(w, r, out)
}

// listPipelines is GET /projects/:id/pipelines, filtered by sha: the emulator has
// no GitLab CI of its own, so a commit's only pipeline is the external one its
// commit statuses live in.
func (s *Server) listPipelines(w http.ResponseWriter, r *http.Request, _ User) {
	p := s.projectOf(w, r)
	if p == nil {
		return
	}
	out := []map[string]any{}
	want := r.URL.Query().Get("sha")
	for sha, list := range p.Statuses {
		if len(list) == 0 || (want != "" && sha != want) {
			continue
		}
		out = append(out, s.pipelineJSON(p, sha, list))
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["id"].(int64) > out[j]["id"].(int64) })
	paginate(w, r, out)
}

// pipelineJSON is the external pipeline a commit's statuses live in: running
// while any name's newest status is running or pending, else failed (or
// canceled) if one is, else success.
func (s *Server) pipelineJSON(p *project, sha string, list []*commitStatus) map[string]any {
	status := "success"
	latest := map[string]string{}
	for _, st := range list {
		latest[st.Name] = st.Status
	}
	for _, v := range latest {
		switch {
		case v == "running" || v == "pending":
			status = "running"
		case (v == "failed" || v == "canceled") && status != "running":
			status = v
		}
	}
	return map[string]any{"id": list[0].PipelineID, "iid": list[0].PipelineID, "project_id": p.ID,
		"sha": sha, "ref": list[0].Ref, "status": status, "source": "external",
		"web_url": s.projectURL(p) + "/-/pipelines/" + strconv.FormatInt(list[0].PipelineID, 10)}
}

// lastPipeline is GET /repository/commits/:sha's last_pipeline: the commit's
// external pipeline, or nil before any status (Renovate's setBranchStatus reads
// its id to post its status into it, and retries while it is null).
func (s *Server) lastPipeline(p *project, sha string) any {
	if list := p.Statuses[sha]; len(list) > 0 {
		return s.pipelineJSON(p, sha, list)
	}
	return nil
}
