package github

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/nudgeflow/nudgeflow/internal/pac"
)

// What Pipelines as Code leaves on commits, and the REST reads of it: commit
// statuses (PaC with a token, the default) or check runs (PaC as a GitHub App,
// ReportAsApp). The decision which event runs, waits for approval or is ignored is
// package pac's; this file only writes its outcome the way PaC's GitHub provider
// does (pkg/provider/github/status.go).

// UserTypeBot is GitHub's user type of App accounts ("<slug>[bot]"), which PaC
// ignores silently when they are not trusted.
const UserTypeBot = "Bot"

// commitStatus is one commit status (POST /repos/{o}/{r}/statuses/{sha}).
type commitStatus struct {
	ID          int64  `json:"id"`
	State       string `json:"state"`
	Description string `json:"description,omitempty"`
	Context     string `json:"context"`
	TargetURL   string `json:"targetURL,omitempty"`
	Creator     string `json:"creator,omitempty"`
	At          int64  `json:"at"`
}

// checkRun is one check run of the PaC App.
type checkRun struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	Status     string `json:"status"`
	Conclusion string `json:"conclusion,omitempty"`
	Title      string `json:"title,omitempty"`
	Summary    string `json:"summary,omitempty"`
	Text       string `json:"text,omitempty"`
}

// pacUser is the login PaC writes as (its token's user).
const pacUser = "pipelines-as-code"

// RestrictCI makes Pipelines as Code enforce its ACL on the repository: only the
// trusted logins (its owner, collaborators, organisation members, people with
// push rights or in OWNERS) run CI; another author's pull request waits for an
// `/ok-to-test` from one of them, and a Bot account's is ignored without a word.
// Without it every author is trusted (PaC's same-repository shortcut on GitHub;
// see pac.ACL).
func (s *Server) RestrictCI(owner, name string, trusted ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.repos[owner+"/"+name]; r != nil {
		r.acl = pac.ACL{Enforced: true, Trusted: append([]string(nil), trusted...)}
	}
}

// ReportAsApp makes Pipelines as Code report on the repository as a GitHub App
// does: check runs instead of commit statuses.
func (s *Server) ReportAsApp(owner, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.repos[owner+"/"+name]; r != nil {
		r.pacApp = true
	}
}

// CommentAs comments on a pull request as a person does in the web UI; an
// `/ok-to-test` from a trusted person starts the pipeline run PaC held.
func (s *Server) CommentAs(owner, name string, number int, u User, body string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, p, err := s.openPull(owner, name, number)
	if err != nil {
		return err
	}
	s.addComment(r, p, u.Login, body)
	return nil
}

// addComment adds a comment and lets PaC read it. Callers hold s.mu.
func (s *Server) addComment(r *repo, p *pull, login, body string) *comment {
	s.nextID++
	c := &comment{ID: s.nextID, Body: body, User: login}
	r.comments[p.Number] = append(r.comments[p.Number], c)
	if p.State == "open" && pac.OkToTestRuns(body, r.acl, login, s.ranFor(r, p.HeadSHA)) {
		s.pacRun(r, p, "ok-to-test")
	}
	return c
}

// isBot reports whether login is a Bot-type account. Callers hold s.mu.
func (s *Server) isBot(login string) bool {
	u, ok := s.tokens.Find(func(u User) bool { return u.Login == login })
	return ok && u.Type == UserTypeBot
}

// ranFor reports whether a pipeline ran for sha. Callers hold s.mu.
func (s *Server) ranFor(r *repo, sha string) bool {
	return s.ci.RanFor(r.owner+"/"+r.name, sha)
}

// pacEvent is PaC receiving a pull_request event. Callers hold s.mu.
func (s *Server) pacEvent(r *repo, p *pull, action, sender string) {
	c := r.Commits[p.HeadSHA]
	if c == nil {
		return
	}
	switch pac.Decide(pac.Event{Builds: pac.GitHubBuilds(action), HeadMessage: c.Message, Sender: sender, SenderIsBot: s.isBot(sender)}, r.acl) {
	case pac.Run:
		s.pacRun(r, p, action)
	case pac.AwaitApproval:
		s.pacPending(r, p, sender)
	}
}

// pacRun starts the pipeline run: a CI event, and its report on the head commit.
// Callers hold s.mu.
func (s *Server) pacRun(r *repo, p *pull, action string) {
	s.ci.Record(CIEvent{Repo: r.owner + "/" + r.name, Number: p.Number, Action: action, HeadSHA: p.HeadSHA})
	plr := pac.PipelineRun(r.name)
	if r.pacApp {
		// PaC reuses the check run that waited for approval (searchCheckRuns).
		cr := r.pendingCheck(p.HeadSHA)
		if cr == nil {
			cr = s.newCheck(r, p.HeadSHA)
		}
		cr.Name, cr.Status, cr.Conclusion = pac.RunName(plr), "in_progress", ""
		cr.Title, cr.Summary, cr.Text = pac.StartedTitle, pac.ApplicationName+"/"+plr+" is running.", ""
		return
	}
	if action == "ok-to-test" {
		// Without an App, the approval first turns the waiting status to success.
		s.setStatus(r, p.HeadSHA, "success", "Approved", pac.ApplicationName, pacUser)
	}
	s.setStatus(r, p.HeadSHA, "pending", pac.StartedTitle, pac.RunName(plr), pacUser)
}

// pacPending is PaC's answer to an untrusted author: a queued check run or a
// pending status titled "Pending approval, waiting for an /ok-to-test", and,
// without an App, a comment saying who is not allowed. Callers hold s.mu.
func (s *Server) pacPending(r *repo, p *pull, sender string) {
	text := pac.NotAllowedText(sender, "pull_request")
	if r.pacApp {
		cr := r.pendingCheck(p.HeadSHA)
		if cr == nil {
			cr = s.newCheck(r, p.HeadSHA)
		}
		cr.Name, cr.Status, cr.Title, cr.Summary, cr.Text = pac.ApplicationName, "queued", pac.PendingApprovalTitle, pac.PendingApprovalSummary, text
		return
	}
	s.setStatus(r, p.HeadSHA, "pending", pac.PendingApprovalTitle, pac.ApplicationName, pacUser)
	s.addComment(r, p, pacUser, pac.PendingApprovalSummary+"<br>"+text)
}

func (r *repo) pendingCheck(sha string) *checkRun {
	for _, cr := range r.checks[sha] {
		if cr.Title == pac.PendingApprovalTitle {
			return cr
		}
	}
	return nil
}

func (s *Server) newCheck(r *repo, sha string) *checkRun {
	s.nextID++
	cr := &checkRun{ID: s.nextID}
	r.checks[sha] = append(r.checks[sha], cr)
	return cr
}

// setStatus adds a commit status. Callers hold s.mu.
func (s *Server) setStatus(r *repo, sha, state, description, context, creator string) *commitStatus {
	s.nextID++
	s.clock++
	st := &commitStatus{ID: s.nextID, State: state, Description: description, Context: context, Creator: creator, At: s.clock}
	r.statuses[sha] = append(r.statuses[sha], st)
	return st
}

// latestStatuses is the newest status of each context, newest first.
func (r *repo) latestStatuses(sha string) []*commitStatus {
	all := r.statuses[sha]
	seen := map[string]bool{}
	var out []*commitStatus
	for i := len(all) - 1; i >= 0; i-- {
		if !seen[all[i].Context] {
			seen[all[i].Context] = true
			out = append(out, all[i])
		}
	}
	return out
}

func (s *Server) statusJSON(st *commitStatus) map[string]any {
	at := time.Unix(1700000000+st.At, 0).UTC().Format(time.RFC3339)
	return map[string]any{"id": st.ID, "node_id": "SC_" + strconv.FormatInt(st.ID, 10), "state": st.State,
		"description": st.Description, "context": st.Context, "target_url": st.TargetURL,
		"creator": map[string]any{"login": st.Creator}, "created_at": at, "updated_at": at}
}

// createStatus is POST /repos/{owner}/{repo}/statuses/{sha}.
func (s *Server) createStatus(w http.ResponseWriter, r *http.Request, u User) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return
	}
	sha := r.PathValue("sha")
	if rp.Commits[sha] == nil {
		unprocessable(w, "No commit found for SHA: "+sha)
		return
	}
	var in struct {
		State       string `json:"state"`
		TargetURL   string `json:"target_url"`
		Description string `json:"description"`
		Context     string `json:"context"`
	}
	if !decode(w, r, &in) {
		return
	}
	switch in.State {
	case "pending", "success", "error", "failure":
	default:
		unprocessable(w, "Validation Failed", map[string]any{"resource": "Status", "field": "state", "code": "custom",
			"message": "state is not included in the list"})
		return
	}
	if in.Context == "" {
		in.Context = "default"
	}
	st := s.setStatus(rp, sha, in.State, in.Description, in.Context, u.Login)
	st.TargetURL = in.TargetURL
	writeJSON(w, http.StatusCreated, s.statusJSON(st))
}

// combinedStatus is GET /repos/{owner}/{repo}/commits/{ref}/status: the newest
// status of each context, paginated, and the combined state.
func (s *Server) combinedStatus(w http.ResponseWriter, r *http.Request, _ User) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return
	}
	c := rp.Resolve(r.PathValue("ref"))
	if c == nil {
		unprocessable(w, "No commit found for SHA: "+r.PathValue("ref"))
		return
	}
	latest := rp.latestStatuses(c.SHA)
	state := "success"
	if len(latest) == 0 {
		state = "pending"
	}
	for _, st := range latest {
		switch {
		case st.State == "error" || st.State == "failure":
			state = "failure"
		case st.State == "pending" && state != "failure":
			state = "pending"
		}
	}
	from, to := s.page(w, r, len(latest))
	out := []map[string]any{}
	for _, st := range latest[from:to] {
		out = append(out, s.statusJSON(st))
	}
	writeJSON(w, http.StatusOK, map[string]any{"state": state, "sha": c.SHA, "total_count": len(latest), "statuses": out,
		"repository": s.repoJSON(rp)})
}

// listCheckRuns is GET /repos/{owner}/{repo}/commits/{ref}/check-runs (filter
// latest: the newest run of each name), paginated.
func (s *Server) listCheckRuns(w http.ResponseWriter, r *http.Request, _ User) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return
	}
	c := rp.Resolve(r.PathValue("ref"))
	if c == nil {
		unprocessable(w, "No commit found for SHA: "+r.PathValue("ref"))
		return
	}
	all := rp.checks[c.SHA]
	var runs []*checkRun
	seen := map[string]bool{}
	for i := len(all) - 1; i >= 0; i-- {
		if r.URL.Query().Get("filter") == "all" || !seen[all[i].Name] {
			seen[all[i].Name] = true
			runs = append(runs, all[i])
		}
	}
	from, to := s.page(w, r, len(runs))
	out := []map[string]any{}
	for _, cr := range runs[from:to] {
		var conclusion any
		if cr.Conclusion != "" {
			conclusion = cr.Conclusion
		}
		out = append(out, map[string]any{"id": cr.ID, "name": cr.Name, "head_sha": c.SHA, "status": cr.Status,
			"conclusion": conclusion, "output": map[string]any{"title": cr.Title, "summary": cr.Summary, "text": cr.Text},
			"app":      map[string]any{"slug": "pipelines-as-code"},
			"html_url": fmt.Sprintf("%s/%s/%s/runs/%d", s.URL(), rp.owner, rp.name, cr.ID)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(runs), "check_runs": out})
}
