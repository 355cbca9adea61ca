package changegroup_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/autogroupprune"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
	cgwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
	"github.com/nudgeflow/nudgeflow/workflows/validatednudge"
)

// Batched nudging (ADR 67 Phase 2) against the real servers: the
// NudgeConfig's spec.batching makes the bundle a batched target, and nudgeflow
// opens, fills and releases automatic ChangeGroups without anyone creating one.

// batchConfig writes the namespace's NudgeConfig: every component of the scenario
// nudges the bundle (mode, gating group "gate" when validated), and the bundle is
// batched by policy.
func (s *scenario) batchConfig(mode konfluxv1alpha1.NudgeMode, policy konfluxv1alpha1.BatchingPolicy) *konfluxv1alpha1.NudgeConfig {
	s.t.Helper()
	nc := &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName, Namespace: s.ns}}
	for _, c := range s.components {
		e := konfluxv1alpha1.NudgeRelationship{From: c, To: "bundle", Mode: mode}
		if mode == konfluxv1alpha1.ModeValidated {
			e.GatingGroup = "gate"
		}
		nc.Spec.Nudges = append(nc.Spec.Nudges, e)
	}
	if mode == konfluxv1alpha1.ModeValidated {
		// A validated edge must not stay in build-nudges-ref (build-service would
		// nudge it ungated): admission refuses it, so the team removes the entry first.
		for _, c := range s.components {
			var comp mirrorv1alpha1.Component
			require.NoError(s.t, s.w.Kube.Get(context.Background(), ctrlclient.ObjectKey{Namespace: s.ns, Name: c}, &comp))
			comp.Spec.BuildNudgesRef = slices.DeleteFunc(comp.Spec.BuildNudgesRef, func(to string) bool { return to == "bundle" })
			require.NoError(s.t, s.w.Kube.Update(context.Background(), &comp))
		}
	}
	policy.Target = "bundle"
	nc.Spec.Batching = []konfluxv1alpha1.BatchingPolicy{policy}
	require.NoError(s.t, s.w.Kube.Create(context.Background(), nc))
	return nc
}

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// groups lists the namespace's ChangeGroups, oldest first.
func (s *scenario) groups() []appstudiov1alpha1.ChangeGroup {
	s.t.Helper()
	var list appstudiov1alpha1.ChangeGroupList
	require.NoError(s.t, s.w.Kube.List(context.Background(), &list, ctrlclient.InNamespace(s.ns)))
	slices.SortFunc(list.Items, func(a, b appstudiov1alpha1.ChangeGroup) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return list.Items
}

// waitGroups waits until the namespace's ChangeGroups satisfy cond.
func (s *scenario) waitGroups(what string, timeout time.Duration, cond func([]appstudiov1alpha1.ChangeGroup) bool) []appstudiov1alpha1.ChangeGroup {
	s.t.Helper()
	var got []appstudiov1alpha1.ChangeGroup
	world.Eventually(s.t, timeout, what, func() (bool, error) {
		got = s.groups()
		if cond(got) {
			return true, nil
		}
		var parts []string
		for _, cg := range got {
			parts = append(parts, fmt.Sprintf("%s automatic=%t phase=%q ready=%q members=%d", cg.Name, grouplookup.IsAutomatic(&cg), cg.Status.Phase, cg.Status.Ready, len(cg.Spec.NudgingComponents)))
		}
		return false, fmt.Errorf("groups: %s", strings.Join(parts, "; "))
	})
	return got
}

// requireAutomatic checks what makes a group automatic: the label, the target, the
// owner, the policy carried into the spec.
func (s *scenario) requireAutomatic(cg *appstudiov1alpha1.ChangeGroup, nc *konfluxv1alpha1.NudgeConfig) {
	s.t.Helper()
	require.True(s.t, grouplookup.IsAutomatic(cg), "ChangeGroup %s is labelled automatic", cg.Name)
	require.Equal(s.t, "bundle", cg.Labels[grouplookup.LabelBatchTarget])
	require.True(s.t, strings.HasPrefix(cg.Name, "bundle-batch-"), "generateName: %s", cg.Name)
	require.Len(s.t, cg.OwnerReferences, 1)
	require.Equal(s.t, "NudgeConfig", cg.OwnerReferences[0].Kind)
	require.Equal(s.t, nc.UID, cg.OwnerReferences[0].UID)
	require.NotNil(s.t, cg.Spec.AutoRelease)
}

// statusOf is a member's status in a group.
func statusOf(cg *appstudiov1alpha1.ChangeGroup, component string) appstudiov1alpha1.ComponentStatus {
	for _, c := range cg.Status.Components {
		if c.Name == component {
			return c
		}
	}
	return appstudiov1alpha1.ComponentStatus{}
}

// renovateRuns are nudgeflow's Renovate PipelineRuns in the namespace.
func (s *scenario) renovateRuns() []tektonv1.PipelineRun {
	s.t.Helper()
	var list tektonv1.PipelineRunList
	require.NoError(s.t, s.w.Kube.List(context.Background(), &list, ctrlclient.InNamespace(s.ns),
		ctrlclient.MatchingLabels{renovate.LabelManagedBy: renovate.ManagedByNudgeflow}))
	return list.Items
}

// 30 operands with immediate edges and a batching policy: their 30 builds, routed
// concurrently by the bridge, open ONE automatic group, which collects every digest
// into one draft PR and releases CI once when all 30 are ready. No person creates a
// ChangeGroup; no build is nudged on its own.
func TestBatchedNudgingThirtyOperandsOnePR(t *testing.T) {
	components := make([]string, 30)
	for i := range components {
		components[i] = fmt.Sprintf("operand-%02d", i+1)
	}
	s := newScenario(t, components...)
	nc := s.batchConfig(konfluxv1alpha1.ModeImmediate, konfluxv1alpha1.BatchingPolicy{Window: dur(time.Hour), MaxWait: dur(24 * time.Hour)})
	require.Empty(t, s.groups(), "nothing is opened before a build")

	latest := map[string]string{}
	start := time.Now()
	for i, c := range components {
		latest[c] = digestOf(c, 1)
		s.buildRun(c, latest[c], start.Add(time.Duration(i)*time.Second))
	}
	groups := s.waitGroups("one automatic group, released with 30/30", 120*time.Second, func(gs []appstudiov1alpha1.ChangeGroup) bool {
		return len(gs) >= 1 && gs[0].Status.Phase == appstudiov1alpha1.PhaseReady && gs[0].Status.Ready == "30/30"
	})
	require.Len(t, groups, 1, "30 builds routed at once open one automatic group")
	cg := &groups[0]
	s.explainOnFailure(cg.Name)
	s.requireAutomatic(cg, nc)
	require.Len(t, cg.Spec.NudgingComponents, 30, "members are the target's nudgers")

	prs := s.f.PRs(s.ns, "bundle")
	require.Len(t, prs, 1, "one PR for 30 builds")
	require.False(t, prs[0].Draft, "released")
	require.Equal(t, latest, s.csvDigests(prs[0].Head), "the final commit holds the latest digest of every operand")
	require.Equal(t, 1, s.f.CIBuilds(s.ns, "bundle"), "exactly one CI build")
	require.Empty(t, s.renovateRuns(), "no build was nudged on its own")

	st := s.query(cg)
	require.True(t, st.Automatic)
	require.NoError(t, s.f.Merge(s.ns, "bundle", prs[0].Number))
	s.waitPhase(cg.Name, appstudiov1alpha1.PhaseCompleted)
	require.Len(t, s.groups(), 1, "no group besides the automatic one, none created by a person")
	s.recordAutoRelease(cg.Name)
}

// recordAutoRelease stores the group's finished history for the replay tests under
// the auto-release shape (only with NUDGEFLOW_RECORD_HISTORIES).
func (s *scenario) recordAutoRelease(name string) {
	s.t.Helper()
	cg := s.group(name)
	s.w.RecordHistory(s.t, localenv.RepoRoot()+"/workflows/changegroup/testdata",
		s.t.Name()+"@"+cgwf.HistoryShape, changegroupapi.WorkflowID(cg.Namespace, cg.Name, string(cg.UID)))
}

// The window passes with one member missing: the batch releases with what is
// ready (one CI build), and the missing member's later build opens the next batch,
// which releases it in its own PR. Nothing is lost, nothing waits for maxWait.
func TestBatchWindowReleasesWithMembersMissing(t *testing.T) {
	s := newScenario(t, three...)
	nc := s.batchConfig(konfluxv1alpha1.ModeImmediate, konfluxv1alpha1.BatchingPolicy{Window: dur(3 * time.Second), MaxWait: dur(time.Hour)})
	now := time.Now()
	s.buildRun("operand-a", digestOf("operand-a", 1), now)
	s.buildRun("operand-b", digestOf("operand-b", 1), now.Add(time.Second))
	first := s.waitGroups("the first batch released by its window with 2 of 3", 90*time.Second, func(gs []appstudiov1alpha1.ChangeGroup) bool {
		return len(gs) == 1 && gs[0].Status.Phase == appstudiov1alpha1.PhaseReady
	})[0]
	s.explainOnFailure(first.Name)
	s.requireAutomatic(&first, nc)
	require.Equal(t, "2/3", first.Status.Ready)
	require.Equal(t, appstudiov1alpha1.ComponentWaiting, statusOf(&first, "operator").State)
	st := s.query(&first)
	require.Contains(t, st.AutoReleased, "no new build for 3s")
	require.Contains(t, st.AutoReleased, "waiting for operator")
	prs := s.f.PRs(s.ns, "bundle")
	require.Len(t, prs, 1)
	require.False(t, prs[0].Draft)
	got := s.csvDigests(prs[0].Head)
	require.Equal(t, digestOf("operand-a", 1), got["operand-a"])
	require.Equal(t, digestOf("operand-b", 1), got["operand-b"])
	require.Equal(t, digestOf("operator", 0), got["operator"], "the missing member is left as it was")
	require.Equal(t, 1, s.f.CIBuilds(s.ns, "bundle"))

	// The missing member builds after the release: the released batch collects
	// nothing more, so the build opens the next batch.
	s.buildRun("operator", digestOf("operator", 1), time.Now())
	gs := s.waitGroups("the next batch opened by the missing member, released by its window", 90*time.Second, func(gs []appstudiov1alpha1.ChangeGroup) bool {
		return len(gs) == 2 && gs[1].Status.Phase == appstudiov1alpha1.PhaseReady
	})
	next := gs[1]
	s.requireAutomatic(&next, nc)
	require.Equal(t, digestOf("operator", 1), statusOf(&next, "operator").NewBuild, "the later build is in the next batch")
	require.Equal(t, "1/3", next.Status.Ready)
	require.Empty(t, statusOf(&s.groups()[0], "operator").NewBuild, "the released batch did not take it")
	world.Eventually(t, 30*time.Second, "the next batch's PR is released", func() (bool, error) {
		return len(s.f.PRs(s.ns, "bundle")) == 2 && s.f.CIBuilds(s.ns, "bundle") == 2, nil
	})
	for _, pr := range s.f.PRs(s.ns, "bundle") {
		if pr.Number != prs[0].Number {
			require.Equal(t, digestOf("operator", 1), s.csvDigests(pr.Head)["operator"])
		}
	}
	require.Empty(t, s.renovateRuns(), "no build was nudged on its own")

	require.NoError(t, s.f.Merge(s.ns, "bundle", prs[0].Number))
	s.waitPhase(first.Name, appstudiov1alpha1.PhaseCompleted)
	s.recordAutoRelease(first.Name)
}

// Validated edges to a batched target: builds wait for their Snapshot; no batch
// opens before it passes; then each passed build joins the batch with the
// Snapshot's digest, and the batch releases once when every member is in.
func TestValidatedBatchedNudging(t *testing.T) {
	members := []string{"operand-a", "operand-b"}
	s := newScenario(t, members...)
	nc := s.batchConfig(konfluxv1alpha1.ModeValidated, konfluxv1alpha1.BatchingPolicy{Window: dur(time.Hour), Release: konfluxv1alpha1.ReleaseAll})
	now := time.Now()
	images := map[string]string{}
	for i, c := range members {
		d := digestOf(c, 1)
		s.buildRun(c, d, now.Add(time.Duration(i)*time.Second))
		images[c] = imageOf(c) + "@" + d
	}
	// The builds wait in their ValidatedNudge workflows: nothing is batched yet.
	for _, c := range members {
		world.Eventually(t, 30*time.Second, "the build waits for its Snapshot", func() (bool, error) {
			_, err := s.w.TemporalClient.DescribeWorkflowExecution(context.Background(), "validated-nudge/"+s.ns+"/"+c+"/bundle", "")
			return err == nil, err
		})
	}
	require.Empty(t, s.groups(), "no batch before a Snapshot passed")

	snap := &mirrorv1alpha1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "gate-passed", Namespace: s.ns},
		Spec: mirrorv1alpha1.SnapshotSpec{ComponentGroup: "gate"}}
	for _, c := range members {
		snap.Spec.Components = append(snap.Spec.Components, mirrorv1alpha1.SnapshotComponent{Name: c, ContainerImage: images[c]})
	}
	require.NoError(t, s.w.Kube.Create(context.Background(), snap))
	require.NoError(t, world.SetStatus(context.Background(), s.w.Kube, snap, func() {
		snap.Status.Conditions = []metav1.Condition{{Type: mirrorv1alpha1.SnapshotTestSucceeded, Status: metav1.ConditionTrue, Reason: "Passed", LastTransitionTime: metav1.Now()}}
	}))

	cg := s.waitGroups("one automatic batch with both validated builds, released", 120*time.Second, func(gs []appstudiov1alpha1.ChangeGroup) bool {
		return len(gs) == 1 && gs[0].Status.Phase == appstudiov1alpha1.PhaseReady
	})[0]
	s.explainOnFailure(cg.Name)
	s.requireAutomatic(&cg, nc)
	for _, c := range members {
		require.Equal(t, images[c], statusOf(&cg, c).NewBuildPullSpec, "%s joined with the Snapshot's image", c)
	}
	prs := s.f.PRs(s.ns, "bundle")
	require.Len(t, prs, 1)
	require.Equal(t, map[string]string{"operand-a": digestOf("operand-a", 1), "operand-b": digestOf("operand-b", 1)}, s.csvDigests(prs[0].Head))
	require.Equal(t, 1, s.f.CIBuilds(s.ns, "bundle"))
	require.Empty(t, s.renovateRuns(), "validated builds were batched, not nudged one by one")
	// The edge's ValidatedNudge records where its build went; its history so far
	// (it lives on, waiting for the next build) is the batching shape's replay input.
	id := validatednudge.WorkflowID(s.ns, "operand-a", "bundle")
	world.Eventually(t, 30*time.Second, "the ValidatedNudge records the batch", func() (bool, error) {
		v, err := s.w.TemporalClient.QueryWorkflow(context.Background(), id, "", validatednudge.QueryState)
		if err != nil {
			return false, err
		}
		var st validatednudge.State
		if err := v.Get(&st); err != nil {
			return false, err
		}
		if len(st.Nudges) == 1 && st.Nudges[0].Phase == validatednudge.PhaseBatched+" in ChangeGroup "+cg.Name {
			return true, nil
		}
		return false, fmt.Errorf("nudges %+v", st.Nudges)
	})
	s.w.RecordHistory(t, localenv.RepoRoot()+"/workflows/validatednudge/testdata", t.Name()+"@"+validatednudge.HistoryShape, id)
}

// A manual ChangeGroup created while an automatic batch is open for the same
// target is admitted; it takes the members it names: the batch hands their held
// build over to the manual group (the hand-back finds the group that collects the
// member now), keeps the others, and later builds of the taken members go to the
// manual group.
func TestManualChangeGroupTakesPrecedenceOverBatch(t *testing.T) {
	s := newScenario(t, three...)
	s.batchConfig(konfluxv1alpha1.ModeImmediate, konfluxv1alpha1.BatchingPolicy{Window: dur(time.Hour)})
	a1 := s.buildRun("operand-a", digestOf("operand-a", 1), time.Now())
	auto := s.waitGroups("a batch holding operand-a", 60*time.Second, func(gs []appstudiov1alpha1.ChangeGroup) bool {
		return len(gs) == 1 && gs[0].Status.Ready == "1/3"
	})[0]
	s.explainOnFailure(auto.Name)

	s.createGroup("manual", []string{"operand-a", "operand-b"}, time.Hour)
	s.explainOnFailure("manual")
	s.waitFor("manual", "operand-a's held build handed over from the batch", 90*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool {
		return statusOf(cg, "operand-a").NewBuild == digestOf("operand-a", 1)
	})
	s.waitFor(auto.Name, "the batch keeps only operator and says it let operand-a's build go", 30*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool {
		return len(cg.Spec.NudgingComponents) == 1 && cg.Spec.NudgingComponents[0].Name == "operator" &&
			statusOf(cg, "operand-a").HandedBackBuild == digestOf("operand-a", 1)
	})
	// Handed over, not nudged: no Nudge workflow, no Renovate run.
	_, err := s.w.TemporalClient.DescribeWorkflowExecution(context.Background(), nudgeapi.WorkflowID(s.ns, string(a1.UID), "bundle"), "")
	require.Error(t, err, "the build was handed over, never nudged on its own")
	require.Empty(t, s.renovateRuns())
	world.Eventually(t, 30*time.Second, "the batch's hand-back Event names the manual group", func() (bool, error) {
		for _, m := range s.handBackEvents(auto.Name) {
			if strings.Contains(m, "-> manual") {
				return true, nil
			}
		}
		return false, fmt.Errorf("events %v", s.handBackEvents(auto.Name))
	})
	world.Eventually(t, 30*time.Second, "an Event on the batch says the manual group took over", func() (bool, error) {
		var list corev1.EventList
		if err := s.w.Kube.List(context.Background(), &list, ctrlclient.InNamespace(s.ns)); err != nil {
			return false, err
		}
		return slices.ContainsFunc(list.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Name == auto.Name && e.Reason == autogroupprune.ReasonSupersededByManual
		}), nil
	})

	// Later builds: the manual group's members go to it, the rest to the batch.
	s.buildRun("operand-b", digestOf("operand-b", 1), time.Now())
	s.buildRun("operator", digestOf("operator", 1), time.Now())
	s.waitFor("manual", "operand-b in the manual group", 60*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool {
		return statusOf(cg, "operand-b").NewBuild == digestOf("operand-b", 1)
	})
	s.waitFor(auto.Name, "operator in the batch", 60*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool {
		return statusOf(cg, "operator").NewBuild == digestOf("operator", 1)
	})
	require.Len(t, s.groups(), 2, "no further batch opened")
}

// Deleting the NudgeConfig while a batch is open deletes the batch (its owner is
// gone; the bridge does what the garbage collector would): its PR is closed and
// every held build goes back to normal nudging.
func TestBatchOfADeletedNudgeConfigHandsItsBuildsBack(t *testing.T) {
	s := newScenario(t, three...)
	nc := s.batchConfig(konfluxv1alpha1.ModeImmediate, konfluxv1alpha1.BatchingPolicy{Window: dur(time.Hour)})
	a1 := s.buildRun("operand-a", digestOf("operand-a", 1), time.Now())
	auto := s.waitGroups("a batch holding operand-a with a draft PR", 60*time.Second, func(gs []appstudiov1alpha1.ChangeGroup) bool {
		return len(gs) == 1 && gs[0].Status.Ready == "1/3" && gs[0].Status.PullRequestURL != ""
	})[0]
	require.NoError(t, s.w.Kube.Delete(context.Background(), nc))
	s.waitNudged(a1, "the batch's held build is handed back")
	s.waitGroups("the batch is gone", 60*time.Second, func(gs []appstudiov1alpha1.ChangeGroup) bool { return len(gs) == 0 })
	world.Eventually(t, 30*time.Second, "the batch's PR is closed", func() (bool, error) {
		prs := s.f.PRs(s.ns, "bundle")
		if len(prs) == 1 && !prs[0].Open && !prs[0].Merged {
			return true, nil
		}
		return false, fmt.Errorf("PRs %+v", prs)
	})
	require.Zero(t, s.f.CIBuilds(s.ns, "bundle"))
	require.Equal(t, digestOf("operand-a", 1), statusOf(&auto, "operand-a").NewBuild)
}

// Beside integration-service (--nudging-peers) integration-service, not nudgeflow, runs immediate
// edges, so the first build of a batched target reaches nudgeflow only as
// integration-service's nudge PipelineRun, with no batch open yet. Here the builds
// carry no Pipelines as Code event type, so this suite's bridge (no nudging peers)
// leaves them alone as the exclusive one leaves immediate edges: only the nudge
// runs bring them in. Each is cancelled at admission and held for the batch; the
// held-nudge reconciler opens the automatic group, records it on the run
// (held-by), and the group collects both builds into one PR, released once.
func TestOtherServicesNudgesOfABatchedTargetOpenTheBatch(t *testing.T) {
	members := []string{"operand-a", "operand-b"}
	s := newScenario(t, members...)
	nc := s.batchConfig(konfluxv1alpha1.ModeImmediate, konfluxv1alpha1.BatchingPolicy{Window: dur(time.Hour), Release: konfluxv1alpha1.ReleaseAll})
	ctx := context.Background()
	var nudges []*tektonv1.PipelineRun
	for i, c := range members {
		build := s.buildRunWith(c, digestOf(c, 1), time.Now().Add(time.Duration(i)*time.Second), nil)
		plr := s.nudge(c, []string{"bundle"}, build.Name)
		require.Equal(t, tektonv1.PipelineRunSpecStatusCancelled, string(plr.Spec.Status), "cancelled at admission: the target is batched")
		nudges = append(nudges, plr)
	}
	groups := s.waitGroups("one automatic group, released with 2/2", 90*time.Second, func(gs []appstudiov1alpha1.ChangeGroup) bool {
		return len(gs) == 1 && gs[0].Status.Phase == appstudiov1alpha1.PhaseReady && gs[0].Status.Ready == "2/2"
	})
	cg := &groups[0]
	s.explainOnFailure(cg.Name)
	s.requireAutomatic(cg, nc)
	for _, plr := range nudges {
		world.Eventually(t, 30*time.Second, "the nudge run records the batch that took its build", func() (bool, error) {
			var got tektonv1.PipelineRun
			if err := s.w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(plr), &got); err != nil {
				return false, err
			}
			a := got.Annotations
			if a[konflux.AnnotationHeldBy] == "bundle="+cg.Name && a[konflux.AnnotationHeldForBatch] == "" && a[konflux.AnnotationRenudge] == "" {
				return true, nil
			}
			return false, fmt.Errorf("annotations %v", a)
		})
	}
	prs := s.f.PRs(s.ns, "bundle")
	require.Len(t, prs, 1, "one PR for both builds")
	got := s.csvDigests(prs[0].Head)
	for _, c := range members {
		require.Equal(t, digestOf(c, 1), got[c])
	}
	require.Equal(t, 1, s.f.CIBuilds(s.ns, "bundle"), "exactly one CI build")
	require.Empty(t, s.renovateRuns(), "no build was nudged on its own")
	require.NoError(t, s.f.Merge(s.ns, "bundle", prs[0].Number))
	s.waitPhase(cg.Name, appstudiov1alpha1.PhaseCompleted)
}
