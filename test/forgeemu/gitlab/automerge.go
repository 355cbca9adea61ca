package gitlab

import (
	"net/http"
	"slices"
	"strconv"
)

// What Renovate's platform automerge and approval options call (tryPrAutomerge,
// ignoreApprovals, approvePr): the merge request's merge state and head pipeline,
// merge_when_pipeline_succeeds, the merge request's approval rules and approve.
// The head pipeline is the external one Pipelines as Code's commit statuses make
// (ci.go); a merge set to happen when it succeeds happens when its statuses are
// all successful, as GitLab's auto-merge does.

type approvalRule struct {
	ID                int64  `json:"id"`
	Name              string `json:"name"`
	RuleType          string `json:"ruleType"` // regular, any_approver
	ApprovalsRequired int    `json:"approvalsRequired"`
}

func approvalRuleJSON(r *approvalRule) map[string]any {
	return map[string]any{"id": r.ID, "name": r.Name, "rule_type": r.RuleType, "approvals_required": r.ApprovalsRequired,
		"eligible_approvers": []any{}, "users": []any{}, "groups": []any{}, "contains_hidden_groups": false}
}

// headPipeline is the merge request's head pipeline (or nil). Callers hold s.mu.
func (s *Server) headPipeline(p *project, m *mergeRequest) any {
	if list := p.Statuses[m.SHA]; len(list) > 0 {
		return s.pipelineJSON(p, m.SHA, list)
	}
	return nil
}

// mergeState is what GitLab says of whether a merge request can merge:
// merge_status (deprecated) and detailed_merge_status (15.6+). Nothing here
// conflicts and no project requires a green pipeline; a rule that wants more
// approvals than given holds it.
func (m *mergeRequest) mergeState(sourceExists bool) (mergeStatus, detailed string) {
	switch {
	case m.State != "opened":
		return "can_be_merged", "not_open"
	case !sourceExists:
		return "cannot_be_merged", "broken_status"
	case m.draft():
		return "can_be_merged", "draft_status"
	}
	for _, r := range m.ApprovalRules {
		if r.ApprovalsRequired > len(m.ApprovedBy) {
			return "can_be_merged", "not_approved"
		}
	}
	return "can_be_merged", "mergeable"
}

// autoMergeFields are the merge request fields automerge reads. Callers hold s.mu.
func (s *Server) autoMergeFields(p *project, m *mergeRequest, out map[string]any) {
	_, sourceExists := p.Repo.Branches[m.Source]
	status, detailed := m.mergeState(sourceExists)
	out["merge_status"], out["detailed_merge_status"], out["has_conflicts"] = status, detailed, false
	out["head_pipeline"] = s.headPipeline(p, m)
	out["pipeline"] = out["head_pipeline"]
	out["merge_when_pipeline_succeeds"] = m.AutoMerge
}

// pipelineRunning reports whether sha's head pipeline is still going.
func (s *Server) pipelineRunning(p *project, sha string) bool {
	list := p.Statuses[sha]
	return len(list) > 0 && s.pipelineJSON(p, sha, list)["status"] == "running"
}

// autoMerge merges the open merge requests at sha set to merge when their
// pipeline succeeds, once it has. Callers hold s.mu.
func (s *Server) autoMerge(p *project, sha string) {
	list := p.Statuses[sha]
	if len(list) == 0 || s.pipelineJSON(p, sha, list)["status"] != "success" {
		return
	}
	for _, m := range p.MRs {
		if m.State == "opened" && m.AutoMerge && m.SHA == sha && !m.draft() {
			u, ok := s.userNamed(m.AutoMergeBy)
			if !ok {
				u = person
			}
			s.merge(p, m, u)
			s.removeSource(p, m, u)
		}
	}
}

// userNamed finds the user a token authenticates as by username. Callers hold s.mu.
func (s *Server) userNamed(username string) (User, bool) {
	return s.tokens.Find(func(u User) bool { return u.Username == username })
}

// removeSource deletes a merged merge request's source branch when asked
// ("Delete source branch"). Callers hold s.mu.
func (s *Server) removeSource(p *project, m *mergeRequest, u User) {
	if !m.RemoveSource {
		return
	}
	if old, ok := p.Repo.Branches[m.Source]; ok && m.Source != p.Repo.DefaultBranch {
		delete(p.Repo.Branches, m.Source)
		s.queuePushHook(p, m.Source, old, "", u)
	}
}

// mergeMR is PUT /merge_requests/:iid/merge: 405 when the merge request is not
// open or is a draft, 406 when it cannot be merged (its source is gone, approvals
// are missing), 409 when sha is given and is not the head. With
// merge_when_pipeline_succeeds and a running head pipeline it is set to merge
// later (200, still opened); otherwise it merges now. should_remove_source_branch
// (or remove_source_branch at creation) deletes the source after the merge.
func (s *Server) mergeMR(w http.ResponseWriter, r *http.Request, u User) {
	p, m := s.mrOf(w, r)
	if m == nil {
		return
	}
	var in struct {
		MergeWhenPipelineSucceeds bool    `json:"merge_when_pipeline_succeeds"`
		AutoMerge                 bool    `json:"auto_merge"`
		ShouldRemoveSourceBranch  *bool   `json:"should_remove_source_branch"`
		SHA                       *string `json:"sha"`
	}
	if r.ContentLength != 0 || r.Header.Get("Content-Type") != "" {
		if !decode(w, r, &in) {
			return
		}
	}
	if m.State != "opened" || m.draft() {
		writeMessage(w, http.StatusMethodNotAllowed, "405 Method Not Allowed")
		return
	}
	_, sourceExists := p.Repo.Branches[m.Source]
	if status, detailed := m.mergeState(sourceExists); status != "can_be_merged" || detailed == "not_approved" {
		writeMessage(w, http.StatusNotAcceptable, "Branch cannot be merged")
		return
	}
	if in.SHA != nil && *in.SHA != m.SHA {
		writeMessage(w, http.StatusConflict, "SHA does not match HEAD of source branch: "+m.SHA)
		return
	}
	if in.ShouldRemoveSourceBranch != nil {
		m.RemoveSource = *in.ShouldRemoveSourceBranch
	}
	if (in.MergeWhenPipelineSucceeds || in.AutoMerge) && s.pipelineRunning(p, m.SHA) {
		m.AutoMerge, m.AutoMergeBy = true, u.Username
		writeJSON(w, http.StatusOK, s.mrJSON(p, m))
		return
	}
	s.merge(p, m, u)
	s.removeSource(p, m, u)
	writeJSON(w, http.StatusOK, s.mrJSON(p, m))
}

// listApprovalRules is GET /merge_requests/:iid/approval_rules.
func (s *Server) listApprovalRules(w http.ResponseWriter, r *http.Request, _ User) {
	_, m := s.mrOf(w, r)
	if m == nil {
		return
	}
	out := []map[string]any{}
	for _, rule := range m.ApprovalRules {
		out = append(out, approvalRuleJSON(rule))
	}
	writeJSON(w, http.StatusOK, out)
}

// createApprovalRule is POST /merge_requests/:iid/approval_rules (name,
// approvals_required): 201.
func (s *Server) createApprovalRule(w http.ResponseWriter, r *http.Request, _ User) {
	_, m := s.mrOf(w, r)
	if m == nil {
		return
	}
	var in struct {
		Name              string `json:"name"`
		ApprovalsRequired *int   `json:"approvals_required"`
	}
	if !decode(w, r, &in) {
		return
	}
	if in.Name == "" || in.ApprovalsRequired == nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "name, approvals_required are missing"})
		return
	}
	s.nextID++
	rule := &approvalRule{ID: s.nextID, Name: in.Name, RuleType: "regular", ApprovalsRequired: *in.ApprovalsRequired}
	m.ApprovalRules = append(m.ApprovalRules, rule)
	writeJSON(w, http.StatusCreated, approvalRuleJSON(rule))
}

func (s *Server) approvalRuleOf(w http.ResponseWriter, r *http.Request) (*mergeRequest, int) {
	_, m := s.mrOf(w, r)
	if m == nil {
		return nil, -1
	}
	id, _ := strconv.ParseInt(r.PathValue("rule"), 10, 64)
	i := slices.IndexFunc(m.ApprovalRules, func(rule *approvalRule) bool { return rule.ID == id })
	if i < 0 {
		notFound(w, "Approval Rule")
	}
	return m, i
}

// updateApprovalRule is PUT /merge_requests/:iid/approval_rules/:rule_id.
func (s *Server) updateApprovalRule(w http.ResponseWriter, r *http.Request, _ User) {
	m, i := s.approvalRuleOf(w, r)
	if i < 0 {
		return
	}
	var in struct {
		Name              *string `json:"name"`
		ApprovalsRequired *int    `json:"approvals_required"`
	}
	if !decode(w, r, &in) {
		return
	}
	rule := m.ApprovalRules[i]
	if in.Name != nil {
		rule.Name = *in.Name
	}
	if in.ApprovalsRequired != nil {
		rule.ApprovalsRequired = *in.ApprovalsRequired
	}
	writeJSON(w, http.StatusOK, approvalRuleJSON(rule))
}

// deleteApprovalRule is DELETE /merge_requests/:iid/approval_rules/:rule_id: 204.
func (s *Server) deleteApprovalRule(w http.ResponseWriter, r *http.Request, _ User) {
	m, i := s.approvalRuleOf(w, r)
	if i < 0 {
		return
	}
	m.ApprovalRules = slices.Delete(m.ApprovalRules, i, i+1)
	w.WriteHeader(http.StatusNoContent)
}

// approveMR is POST /merge_requests/:iid/approve: 201 with the approval state;
// the author may not approve their own (GitLab's default "prevent approval by
// author") and gets 401, as does a second approval by the same user.
func (s *Server) approveMR(w http.ResponseWriter, r *http.Request, u User) {
	_, m := s.mrOf(w, r)
	if m == nil {
		return
	}
	if u.Username == m.Author || slices.Contains(m.ApprovedBy, u.Username) {
		writeMessage(w, http.StatusUnauthorized, "401 Unauthorized")
		return
	}
	m.ApprovedBy = append(m.ApprovedBy, u.Username)
	by := []map[string]any{}
	for _, name := range m.ApprovedBy {
		by = append(by, map[string]any{"user": map[string]any{"username": name}})
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": m.ID, "iid": m.IID, "approved": true, "approved_by": by})
}
