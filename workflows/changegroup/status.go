package changegroup

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	changegroupcr "github.com/nudgeflow/nudgeflow/contracts/changegroupcrapi"
	handback "github.com/nudgeflow/nudgeflow/contracts/handbackapi"
	"github.com/nudgeflow/nudgeflow/internal/searchattr"
)

// publish writes the CR status and the search attributes when they are behind.
func (r *run) publish() {
	s := r.s
	ready, _ := s.counts()
	if string(s.Phase) != r.lastPhase || ready != r.lastReady {
		if err := workflow.UpsertTypedSearchAttributes(r.ctx,
			searchattr.Phase.ValueSet(string(s.Phase)), searchattr.ReadyCount.ValueSet(int64(ready))); err != nil {
			workflow.GetLogger(r.ctx).Warn("search attributes not updated", "error", err)
		}
		r.lastPhase, r.lastReady = string(s.Phase), ready
		workflow.SetCurrentDetails(r.ctx, s.details())
	}
	if !s.StatusStale {
		return
	}
	err := workflow.ExecuteActivity(r.kubeCtx("write the ChangeGroup's status"), changegroupcr.WriteStatusActivity,
		changegroupcr.StatusRequest{Namespace: r.in.Namespace, Name: r.in.Name, UID: r.in.UID, Status: s.status(r.id)}).Get(r.ctx, nil)
	if err != nil {
		workflow.GetLogger(r.ctx).Warn("status not written; retrying at the next wake-up", "error", err)
		return
	}
	s.StatusStale = false
}

// details is the markdown the Web UI shows as the workflow's current details.
func (s *State) details() string {
	var b strings.Builder
	ready, total := s.counts()
	b.WriteString(fmt.Sprintf("**%s** — %d/%d ready", s.Phase, ready, total))
	if s.PR.URL != "" {
		b.WriteString(fmt.Sprintf(" — [PR #%d](%s)", s.PR.Number, s.PR.URL))
	}
	b.WriteString("\n\n| component | new build | state |\n|---|---|---|\n")
	for _, c := range s.Components {
		b.WriteString(fmt.Sprintf("| %s | %s | %s |\n", c.Name, shortDigest(c.New), c.State))
	}
	return b.String()
}

func shortDigest(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

// status projects the state onto the CR's status.
func (s *State) status(workflowID string) appstudiov1alpha1.ChangeGroupStatus {
	ready, total := s.counts()
	st := appstudiov1alpha1.ChangeGroupStatus{
		Phase:          s.Phase,
		PullRequestURL: s.PR.URL,
		StartTime:      timePtr(s.StartTime),
		ReadyTime:      timePtr(s.ReadyTime),
		CompletionTime: timePtr(s.CompletionTime),
		Ready:          fmt.Sprintf("%d/%d", ready, total),
		WorkflowID:     workflowID,
	}
	for _, c := range s.Components {
		state := c.State
		if state == appstudiov1alpha1.ComponentReady && c.NotReferenced {
			state = appstudiov1alpha1.ComponentNotReferenced
		}
		st.Components = append(st.Components, appstudiov1alpha1.ComponentStatus{
			Name: c.Name, OriginalBuild: c.Original, NewBuild: c.New, NewBuildPullSpec: c.PullSpec,
			State: state, LastUpdateTime: timePtr(c.UpdatedAt), BuildPipelineRun: c.PipelineRun,
			HandedBackBuild: c.HandedBack, References: c.References,
		})
	}
	st.Conditions = []metav1Condition{s.readyCondition(ready, total)}
	if s.CI != nil {
		st.Conditions = append(st.Conditions, s.CI.condition())
	}
	return st
}

func (s *State) readyCondition(ready, total int) metav1Condition {
	cond := metav1Condition{Type: appstudiov1alpha1.ConditionAllComponentsReady}
	waiting := s.waitingFor()
	switch {
	case total > 0 && len(waiting) == 0:
		cond.Status, cond.Reason = "True", "AllComponentsReady"
		cond.Message = fmt.Sprintf("All %d components are ready", total)
	case len(waiting) == 1:
		cond.Status, cond.Reason = "False", "WaitingForComponents"
		cond.Message = "Waiting for 1 component: " + waiting[0]
	default:
		cond.Status, cond.Reason = "False", "WaitingForComponents"
		cond.Message = fmt.Sprintf("Waiting for %d components: %s", len(waiting), strings.Join(waiting, ", "))
	}
	if s.Released && len(waiting) > 0 {
		cond.Reason = "ReleasedEarly"
		cond.Message += fmt.Sprintf(" (released with %d of %d ready)", ready, total)
	}
	if s.Phase.IsFinal() && s.Reason != "" {
		cond.Message += "; " + string(s.Phase) + ": " + s.Message
	}
	var unreferenced []string
	for _, c := range s.Components {
		if c.NotReferenced && c.State != appstudiov1alpha1.ComponentDropped {
			unreferenced = append(unreferenced, c.Name)
		}
	}
	if len(unreferenced) > 0 {
		cond.Message += "; referenced nowhere in the nudged component's matched files (drop them or add a reference): " +
			strings.Join(unreferenced, ", ")
	}
	if s.RefusedCount > 0 {
		latest := "latest: "
		if s.RefusedCount <= len(s.Refused) {
			latest = ""
		}
		cond.Message += fmt.Sprintf("; %d build(s) refused, the cluster did not build them (see the %s Events): %s%s",
			s.RefusedCount, buildcheck.EventReason, latest, strings.Join(s.Refused, ", "))
	}
	if s.HandedBackCount > 0 {
		cond.Message += fmt.Sprintf("; %d build(s) handed back to normal nudging (see status.components[].handedBackBuild and the %s Events)",
			s.HandedBackCount, handback.EventReason)
	}
	return cond
}
