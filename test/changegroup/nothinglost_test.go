package changegroup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/contracts/handbackapi"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// Nothing lost, against the real servers: a build a group held is in its merged PR or
// nudged normally; a group whose workflow ended holds nothing.

// heldBuild builds component (its n-th digest) and returns the build PipelineRun;
// the nudge PipelineRun build-service creates for it is intercepted.
func (s *scenario) heldBuild(component string, n int) *tektonv1.PipelineRun {
	s.t.Helper()
	b := s.buildRun(component, digestOf(component, n), time.Now())
	plr := s.nudge(component, []string{"bundle"}, b.Name)
	require.Equal(s.t, tektonv1.PipelineRunSpecStatus(tektonv1.PipelineRunSpecStatusCancelled), plr.Spec.Status, "the nudge is intercepted")
	return b
}

// waitNudged waits for the immediate Nudge of a build: the build went back to
// normal nudging.
func (s *scenario) waitNudged(build *tektonv1.PipelineRun, what string) {
	s.t.Helper()
	id := nudgeapi.WorkflowID(s.ns, string(build.UID), "bundle")
	world.Eventually(s.t, 60*time.Second, what+": "+id, func() (bool, error) {
		_, err := s.w.TemporalClient.DescribeWorkflowExecution(context.Background(), id, "")
		return err == nil, err
	})
}

func (s *scenario) handBackEvents(name string) []string {
	s.t.Helper()
	var list corev1.EventList
	require.NoError(s.t, s.w.Kube.List(context.Background(), &list, ctrlclient.InNamespace(s.ns)))
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == handbackapi.EventReason {
			out = append(out, e.Message)
		}
	}
	return out
}

func TestDroppedThenRebuiltIsNudgedNormally(t *testing.T) {
	s := newScenario(t, three...)
	cg := s.createGroup("g", three, 0)
	s.explainOnFailure("g")
	a1 := s.heldBuild("operand-a", 1)
	s.waitFor("g", "operand-a ready", 30*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool { return cg.Status.Ready == "1/3" })
	s.annotate("g", "drop=operand-a")
	s.waitNudged(a1, "the dropped member's collected build is handed back")
	a2 := s.heldBuild("operand-a", 2)
	s.waitNudged(a2, "a build of the dropped member after the drop is nudged")
	got := s.waitFor("g", "the status names the handed-back build", 30*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool {
		for _, c := range cg.Status.Components {
			if c.Name == "operand-a" {
				return c.State == appstudiov1alpha1.ComponentDropped && c.HandedBackBuild == digestOf("operand-a", 2)
			}
		}
		return false
	})
	require.Contains(t, got.Status.Conditions[0].Message, "handed back to normal nudging")
	world.Eventually(t, 30*time.Second, "a BuildsHandedBack Event on the group", func() (bool, error) {
		return len(s.handBackEvents("g")) >= 2, nil
	})
	for _, c := range s.query(cg).Components {
		if c.Name == "operand-a" {
			require.Empty(t, c.Pushed, "its digest left the PR")
		}
	}
}

// integration-service acknowledges a build with the targets of the nudge PipelineRun
// it created, even when nudgeflow's webhook cancelled that run because a group held
// the nudge. The bridge gives the build to the group (and acknowledges it), and a
// hand-back still nudges it: hand-backs never read integration-service's annotation.
func TestHandBackNudgesWhatIntegrationServiceListed(t *testing.T) {
	s := newScenario(t, three...)
	s.createGroup("g", three, 0)
	s.explainOnFailure("g")
	a1 := s.heldBuild("operand-a", 1)
	isAck := fmt.Sprintf(`{"metadata":{"annotations":{%q:"bundle"}}}`, konflux.AnnotationISNudgeProcessed)
	require.NoError(t, s.w.Kube.Patch(context.Background(), a1, ctrlclient.RawPatch(types.MergePatchType, []byte(isAck))))
	s.waitFor("g", "operand-a ready", 30*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool { return cg.Status.Ready == "1/3" })
	world.Eventually(t, 30*time.Second, "the bridge routed the build to the group and released it", func() (bool, error) {
		var b tektonv1.PipelineRun
		if err := s.w.Kube.Get(context.Background(), ctrlclient.ObjectKeyFromObject(a1), &b); err != nil {
			return false, err
		}
		if b.Annotations[konflux.AnnotationNudgeRouted] != "bundle" || len(b.Finalizers) != 0 {
			return false, fmt.Errorf("annotations %v, finalizers %v", b.Annotations, b.Finalizers)
		}
		return true, nil
	})
	s.annotate("g", "drop=operand-a")
	s.waitNudged(a1, "the dropped member's build is handed back despite integration-service's annotation")
}

// reconcileTrouble sums the held-nudge controller's errors and delayed requeues.
func reconcileTrouble(t *testing.T) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	require.NoError(t, err)
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["controller"] == "held-nudge" && labels["result"] != "success" {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// A group whose workflow ended while its CR status still says it collects (its last
// status write failed, or it failed to start while the API server was down) holds
// nothing: a build intercepted because of the stale status is nudged, once, and
// the held-nudge reconciler does not loop on it.
func TestEndedWorkflowWithStaleStatusHoldsNothing(t *testing.T) {
	s := newScenario(t, three...)
	cg := s.createGroup("g", three, 0)
	s.heldBuild("operand-a", 1)
	s.waitFor("g", "operand-a ready", 30*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool { return cg.Status.Ready == "1/3" })
	id := changegroupapi.WorkflowID(cg.Namespace, cg.Name, string(cg.UID))
	require.NoError(t, s.w.TemporalClient.TerminateWorkflow(context.Background(), id, "", "simulated: the group ended but its status was never written"))
	require.False(t, s.group("g").Status.Phase.IsFinal(), "the CR status is stale on purpose: it still says the group collects")

	before := reconcileTrouble(t)
	b := s.heldBuild("operand-b", 1)
	s.waitNudged(b, "the build is nudged around the ended group")
	require.Equal(t, before, reconcileTrouble(t), "the held-nudge reconciler neither failed nor requeued")
	run := s.w.TemporalClient.GetWorkflow(context.Background(), id, "")
	desc, err := s.w.TemporalClient.DescribeWorkflowExecution(context.Background(), id, run.GetRunID())
	require.NoError(t, err)
	require.Equal(t, "Terminated", desc.GetWorkflowExecutionInfo().GetStatus().String(), "no new run was started for the ended group")
}

// A group deleted and re-created under the same name is a new group: its own
// branch and PR; the old PR is never adopted or pushed to.
func TestRecreatedGroupNeverAdoptsTheOldPR(t *testing.T) {
	s := newScenario(t, three...)
	first := s.createGroup("g", three, 0)
	s.heldBuild("operand-a", 1)
	old := s.draftPR()
	require.Contains(t, old.Head, s.ns+"/g-"+string(first.UID)[:8], "the branch names namespace, group and UID")
	oldHead, _ := shared.emu.Head(s.ns, "bundle", old.Head)
	require.NoError(t, s.w.Kube.Delete(context.Background(), first))
	world.Eventually(t, 60*time.Second, "the deleted group's PR is closed", func() (bool, error) {
		pr, _ := shared.emu.PR(s.ns, "bundle", old.Number)
		return pr.State == "closed", nil
	})

	second := s.createGroup("g", three, 0)
	require.NotEqual(t, first.UID, second.UID)
	s.heldBuild("operand-b", 1)
	var fresh []string
	world.Eventually(t, 60*time.Second, "the re-created group opens its own PR", func() (bool, error) {
		fresh = nil
		for _, pr := range shared.emu.PRs(s.ns, "bundle") {
			if pr.Number != old.Number && pr.State == "open" {
				fresh = append(fresh, pr.Head)
			}
		}
		if len(fresh) == 1 {
			return true, nil
		}
		return false, fmt.Errorf("open PRs besides the old one: %v", fresh)
	})
	require.True(t, strings.HasSuffix(fresh[0], "/g-"+string(second.UID)[:8]), fresh[0])
	stillOld, _ := shared.emu.Head(s.ns, "bundle", old.Head)
	require.Equal(t, oldHead.SHA, stillOld.SHA, "the old PR's branch was not pushed to")
	require.Equal(t, digestOf("operand-b", 1), s.csvDigests(fresh[0])["operand-b"])
}
