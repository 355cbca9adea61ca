package nudges

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/activities/renovate/renovatetest"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
	"github.com/nudgeflow/nudgeflow/workflows/nudge"
	"github.com/nudgeflow/nudgeflow/workflows/validatednudge"
)

func immediate(from, to string) konfluxv1alpha1.NudgeRelationship {
	return konfluxv1alpha1.NudgeRelationship{From: from, To: to, Mode: konfluxv1alpha1.ModeImmediate}
}

func validated(from, to, gate string) konfluxv1alpha1.NudgeRelationship {
	return konfluxv1alpha1.NudgeRelationship{From: from, To: to, Mode: konfluxv1alpha1.ModeValidated, GatingGroup: gate}
}

// An immediate edge: one Renovate PipelineRun with the Konflux labels, annotations
// and config, its ConfigMap and token Secret owned by it; a re-delivered build
// changes nothing; the run's end (signalled by the bridge) ends the Nudge with an
// Event.
func TestImmediateEdgeLaunchesExactlyOneOwnedRun(t *testing.T) {
	f := newFixture(t)
	f.component("operand", "", nil)
	f.component("bundle", f.repoURL("gitlab.com", "bundle")+".git", nil)
	f.credentials("gitlab.com")
	f.nudgeConfig(immediate("operand", "bundle"))
	f.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: renovate.NamespaceConfigMap},
		Data: map[string]string{"labels": "team-a", "automerge": "true"}})
	b := f.build("operand", 1, nil)

	plr := f.waitRuns(1)[0]
	require.Equal(t, renovate.LabelTypeNudge, plr.Labels[renovate.LabelType])
	require.Equal(t, "bundle", plr.Annotations[renovate.AnnotationNudgedComponents])
	require.Equal(t, "operand", plr.Annotations[renovate.AnnotationNudgingComponent])
	require.Equal(t, "quay.io/org/operand:rev1", plr.Annotations[renovate.AnnotationNudgingImage])
	require.Equal(t, b.Name, plr.Annotations[renovate.AnnotationNudgingPipeline])
	require.Equal(t, "0000000000000000000000000000000000000001", plr.Annotations[renovate.AnnotationNudgingCommit])
	require.Equal(t, renovate.DefaultImage, plr.Spec.PipelineSpec.Tasks[0].TaskSpec.Steps[0].Image)
	require.Equal(t, "build-pipeline-operand", plr.Spec.TaskRunTemplate.ServiceAccountName)

	cfg, raw := f.config(plr)
	require.Equal(t, "gitlab", cfg.Platform)
	require.Equal(t, "https://gitlab.com/api/v4/", cfg.Endpoint)
	require.Equal(t, f.ns+"/bundle", cfg.Repositories[0].Repository)
	require.Equal(t, []string{"main"}, cfg.Repositories[0].BaseBranches)
	require.Equal(t, []string{renovate.NudgeLabel, "team-a"}, cfg.Labels)
	require.True(t, cfg.Automerge)
	require.Equal(t, "rev1", cfg.CustomManagers[0].CurrentValueTemplate)
	require.Equal(t, "quay.io/org/operand", cfg.CustomManagers[0].DepNameTemplate)
	require.NotContains(t, string(raw), token, "the token lives only in the Secret")

	for _, obj := range []ctrlclient.Object{&corev1.ConfigMap{}, &corev1.Secret{}} {
		require.NoError(t, f.w.Kube.Get(f.ctx, ctrlclient.ObjectKey{Namespace: f.ns, Name: plr.Name}, obj))
		owners := obj.GetOwnerReferences()
		require.Len(t, owners, 1, "%T is owned by the run", obj)
		require.Equal(t, plr.UID, owners[0].UID)
		require.Equal(t, "PipelineRun", owners[0].Kind)
	}
	var secret corev1.Secret
	require.NoError(t, f.w.Kube.Get(f.ctx, ctrlclient.ObjectKey{Namespace: f.ns, Name: plr.Name}, &secret))
	require.Equal(t, token, string(secret.Data["token_0"]))

	// Re-deliver the build twice (a resync, a second bridge): nothing new.
	wfID := nudgeapi.WorkflowID(f.ns, string(b.UID), "bundle")
	runID := f.runID(wfID)
	require.NotEmpty(t, runID)
	r := &builds.BuildReconciler{Client: f.w.Kube, Options: builds.Options{Temporal: f.w.TemporalClient, TaskQueue: taskQueue, Tuning: tuning}}
	for i := 0; i < 2; i++ {
		_, err := r.Reconcile(f.ctx, ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(b)})
		require.NoError(t, err)
	}
	require.Len(t, f.renovateRuns(), 1)
	require.Equal(t, runID, f.runID(wfID), "the same Nudge run, not a second one")

	f.finish(plr, true)
	var res nudgeapi.Result
	require.NoError(t, f.w.TemporalClient.GetWorkflow(f.ctx, wfID, "").Get(f.ctx, &res))
	require.Equal(t, nudgeapi.PhaseSucceeded, res.Phase)
	require.Equal(t, []string{nudge.ReasonSucceeded}, reasons(f.events("bundle")))

	// After the nudge ended, a late re-delivery still starts nothing.
	_, err := r.Reconcile(f.ctx, ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(b)})
	require.NoError(t, err)
	require.Equal(t, runID, f.runID(wfID))
	require.Len(t, f.renovateRuns(), 1)
}

// build-nudges-ref without a NudgeConfig acts as immediate. The Renovate run fails
// twice, then succeeds: three runs, one Event per outcome.
func TestRenovateFailsTwiceThenSucceeds(t *testing.T) {
	f := newFixture(t)
	f.component("operand", "", nil, "bundle")
	f.component("bundle", f.repoURL("github.com", "bundle"), nil)
	f.credentials("github.com")
	b := f.build("operand", 1, nil)

	f.finish(f.waitRuns(1)[0], false)
	f.finish(f.waitRuns(2)[1], false)
	runs := f.waitRuns(3)
	f.finish(runs[2], true)
	wfID := nudgeapi.WorkflowID(f.ns, string(b.UID), "bundle")
	var res nudgeapi.Result
	require.NoError(t, f.w.TemporalClient.GetWorkflow(f.ctx, wfID, "").Get(f.ctx, &res))
	require.Equal(t, 3, res.Attempts)
	require.Equal(t, []string{nudge.ReasonRunFailed, nudge.ReasonRunFailed, nudge.ReasonSucceeded}, reasons(f.events("bundle")))
	for i, r := range runs {
		require.Equal(t, renovateapi.RunName(wfID, i+1), r.Name, "deterministic name per attempt")
	}
	require.Equal(t, corev1.EventTypeWarning, f.events("bundle")[0].Type)
	f.w.RecordHistory(t, filepath.Join(localenv.RepoRoot(), "workflows", "nudge", "testdata"), t.Name()+"@"+nudge.HistoryShape, wfID)
}

// A person cancels the Renovate run (spec.status Cancelled, as `tkn pipelinerun
// cancel` and the console write it) and Tekton ends it as Cancelled: the nudge ends
// Cancelled after that one run with a Warning Event, and launches nothing again.
func TestPersonCancelledRunEndsTheNudge(t *testing.T) {
	f := newFixture(t)
	f.component("operand", "", nil, "bundle")
	f.component("bundle", f.repoURL("github.com", "bundle"), nil)
	f.credentials("github.com")
	b := f.build("operand", 1, nil)

	run := f.waitRuns(1)[0]
	patch := ctrlclient.MergeFrom(run.DeepCopy())
	run.Spec.Status = tektonv1.PipelineRunSpecStatusCancelled
	require.NoError(t, f.w.Kube.Patch(f.ctx, &run, patch), "the person's cancel")
	require.NoError(t, world.SetStatus(f.ctx, f.w.Kube, &run, func() {
		run.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionFalse,
			Reason: tektonv1.PipelineRunReasonCancelled.String(), Message: "PipelineRun \"" + run.Name + "\" was cancelled"})
	}))

	wfID := nudgeapi.WorkflowID(f.ns, string(b.UID), "bundle")
	var res nudgeapi.Result
	require.NoError(t, f.w.TemporalClient.GetWorkflow(f.ctx, wfID, "").Get(f.ctx, &res))
	require.Equal(t, nudgeapi.PhaseCancelled, res.Phase)
	require.Equal(t, 1, res.Attempts)
	require.Len(t, f.renovateRuns(), 1, "the workflow ended: no run launched after the cancel")
	evs := f.events("bundle")
	require.Equal(t, []string{nudge.ReasonCancelled}, reasons(evs))
	require.Equal(t, corev1.EventTypeWarning, evs[0].Type)
	require.Contains(t, evs[0].Message, "not retried")
	f.w.RecordHistory(t, filepath.Join(localenv.RepoRoot(), "workflows", "nudge", "testdata"), t.Name()+"@"+nudge.HistoryShape, wfID)
}

// validatedState waits until the edge's workflow state satisfies cond.
func (f *fixture) validatedState(from, to, what string, cond func(validatednudge.State) bool) validatednudge.State {
	f.t.Helper()
	var st validatednudge.State
	world.Eventually(f.t, waitFor, what, func() (bool, error) {
		st = validatednudge.State{}
		if err := f.query(validatednudge.WorkflowID(f.ns, from, to), validatednudge.QueryState, &st); err != nil {
			return false, err
		}
		return cond(st), nil
	})
	return st
}

func (f *fixture) snapshot(name, group string, images map[string]string, passed bool) {
	f.t.Helper()
	s := &mirrorv1alpha1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: mirrorv1alpha1.SnapshotSpec{ComponentGroup: group}}
	for c, img := range images {
		s.Spec.Components = append(s.Spec.Components, mirrorv1alpha1.SnapshotComponent{Name: c, ContainerImage: img})
	}
	f.create(s)
	status, reason := metav1.ConditionTrue, "Passed"
	if !passed {
		status, reason = metav1.ConditionFalse, "Failed"
	}
	require.NoError(f.t, world.SetStatus(f.ctx, f.w.Kube, s, func() {
		s.Status.Conditions = []metav1.Condition{{Type: mirrorv1alpha1.SnapshotTestSucceeded, Status: status, Reason: reason, LastTransitionTime: metav1.Now()}}
	}))
}

// validatedOperandToBundle is a namespace whose operand nudges the bundle (on the
// GitHub emulator) once a Snapshot of ComponentGroup gate passes; other is a second
// member of the group.
func validatedOperandToBundle(t *testing.T) *fixture {
	f := newFixture(t)
	f.component("operand", "", nil)
	f.component("other", "", nil)
	f.component("bundle", f.repoURL("github.com", "bundle"), nil)
	f.credentials("github.com")
	f.nudgeConfig(validated("operand", "bundle", "gate"))
	return f
}

// pendingBuild builds operand n and waits until the edge holds it.
func (f *fixture) pendingBuild(n int) {
	f.t.Helper()
	f.build("operand", n, nil)
	f.validatedState("operand", "bundle", fmt.Sprintf("build %d pending", n), func(st validatednudge.State) bool {
		return st.Pending != nil && st.Pending.PullSpec == pullSpec("operand", n)
	})
}

// A validated edge nudges only digests whose gating Snapshot passed, in build order:
// fail → dropped; build 2 then 3 before any Snapshot → 2 superseded even though its
// Snapshot passes; 3 passes → nudged; then 4 passes → nudged after 3.
func TestValidatedEdgeNudgesOnlyPassingDigestsInOrder(t *testing.T) {
	f := validatedOperandToBundle(t)
	has := func(st validatednudge.State, key string) bool {
		for _, s := range st.SeenSnapshots {
			if s == key {
				return true
			}
		}
		return false
	}

	f.pendingBuild(1)
	f.snapshot("s1", "gate", map[string]string{"operand": pullSpec("operand", 1), "other": "quay.io/org/other@" + digestOf(99)}, false)
	f.validatedState("operand", "bundle", "build 1 dropped", func(st validatednudge.State) bool { return st.Pending == nil && len(st.Dropped) == 1 })
	require.Empty(t, f.renovateRuns(), "a failed digest is never nudged")

	f.build("operand", 2, nil)
	f.build("operand", 3, nil)
	f.validatedState("operand", "bundle", "build 3 pending", func(st validatednudge.State) bool {
		return st.Pending != nil && st.Pending.PullSpec == pullSpec("operand", 3)
	})
	f.snapshot("s2", "gate", map[string]string{"operand": pullSpec("operand", 2)}, true)
	f.snapshot("s2-other-group", "elsewhere", map[string]string{"operand": pullSpec("operand", 3)}, false)
	f.validatedState("operand", "bundle", "s2 seen", func(st validatednudge.State) bool { return has(st, "s2/true") })
	require.Empty(t, f.renovateRuns(), "build 2 was superseded by build 3")

	f.snapshot("s3", "gate", map[string]string{"operand": pullSpec("operand", 3)}, true)
	run3 := f.waitRuns(1)[0]
	require.Equal(t, "quay.io/org/operand:rev3", run3.Annotations[renovate.AnnotationNudgingImage])
	f.build("operand", 4, nil)
	f.snapshot("s4", "gate", map[string]string{"operand": pullSpec("operand", 4)}, true)
	// Build 4 waits for build 3's nudge to end: order is kept.
	f.validatedState("operand", "bundle", "build 4 ready behind the running nudge", func(st validatednudge.State) bool {
		return st.Ready != nil && st.Ready.PullSpec == pullSpec("operand", 4)
	})
	require.Len(t, f.renovateRuns(), 1)
	f.finish(run3, true)
	var run4 tektonv1.PipelineRun
	for _, r := range f.waitRuns(2) {
		if r.Name != run3.Name {
			run4 = r
		}
	}
	require.Equal(t, "quay.io/org/operand:rev4", run4.Annotations[renovate.AnnotationNudgingImage])
	f.finish(run4, true)
	st := f.validatedState("operand", "bundle", "two nudges recorded", func(st validatednudge.State) bool { return len(st.Nudges) == 2 })
	require.Equal(t, []string{digestOf(3), digestOf(4)}, []string{st.Nudges[0].Digest, st.Nudges[1].Digest})
	require.Equal(t, nudgeapi.PhaseSucceeded, st.Nudges[1].Phase)
	// The edge's workflow lives on (it waits for the next build): its history so far.
	f.w.RecordHistory(t, filepath.Join(localenv.RepoRoot(), "workflows", "validatednudge", "testdata"), t.Name()+"@"+validatednudge.HistoryShape,
		validatednudge.WorkflowID(f.ns, "operand", "bundle"))
}

// An edge held by an active ChangeGroup: its workflow gets the build, and no
// Renovate run or Nudge exists.
func TestEdgeHeldByChangeGroupSignalsTheGroupOnly(t *testing.T) {
	f := newFixture(t)
	f.component("operand", "", nil)
	f.component("bundle", f.repoURL("github.com", "bundle"), nil)
	f.credentials("github.com")
	f.nudgeConfig(immediate("operand", "bundle"))
	// The finalizer is what the bridge's ChangeGroup reconciler adds before it starts
	// the workflow (this world runs only the build router): a group without it is
	// not initialised yet and takes no build.
	cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "bundle-update", Finalizers: []string{konflux.FinalizerChangeGroup}},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle",
			NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "operand"}, {Name: "operand-b"}}}}
	f.create(cg)
	cgID := changegroupapi.WorkflowID(f.ns, cg.Name, string(cg.UID))
	_, err := f.w.TemporalClient.ExecuteWorkflow(f.ctx, client.StartWorkflowOptions{ID: cgID, TaskQueue: standInQueue}, changegroupapi.WorkflowName)
	require.NoError(t, err)

	b := f.build("operand", 7, nil)
	var got []changegroupapi.ComponentBuilt
	world.Eventually(t, waitFor, "the ChangeGroup workflow received the build", func() (bool, error) {
		got = nil
		return len(got) == 0 && f.query(cgID, changegroupapi.QueryState, &got) == nil && len(got) == 1, nil
	})
	require.Equal(t, "operand", got[0].Component)
	require.Equal(t, digestOf(7), got[0].Digest)
	require.Equal(t, pullSpec("operand", 7), got[0].PullSpec)
	require.Equal(t, b.Name, got[0].BuildPipelineRun)
	require.Empty(t, f.renovateRuns(), "no Renovate run for a held edge")
	require.Empty(t, f.runID(nudgeapi.WorkflowID(f.ns, string(b.UID), "bundle")), "no Nudge workflow for a held edge")
}

// Both ConfigMap tiers: the namespace-wide one; a component's own one REPLACES it;
// a named ConfigMap that is missing gives the built-in defaults. Every generated
// config passes renovate-config-validator.
func TestConfigMapTiers(t *testing.T) {
	f := newFixture(t)
	f.component("operand", "", map[string]string{renovate.AnnotationSimpleBranch: "true"})
	f.component("bundle-a", f.repoURL("github.com", "a"), nil)
	f.component("bundle-b", f.repoURL("github.com", "b"), map[string]string{renovate.AnnotationConfigMap: "bundle-b-renovate"})
	f.component("bundle-c", f.repoURL("github.com", "c"), map[string]string{renovate.AnnotationConfigMap: "does-not-exist"})
	f.credentials("github.com")
	f.nudgeConfig(immediate("operand", "bundle-a"), immediate("operand", "bundle-b"), immediate("operand", "bundle-c"))
	f.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: renovate.NamespaceConfigMap},
		Data: map[string]string{"labels": "ns-label", "automerge": "true", "fileMatch": `.*Dockerfile`}})
	f.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bundle-b-renovate"},
		Data: map[string]string{"labels": "b-label", "commitMessagePrefix": "chore(nudge): ", "automergeSchedule": "* 22-23 * * *; * * * * 0,6"}})
	f.build("operand", 1, nil)

	byTarget := map[string]renovate.Config{}
	raws := map[string][]byte{}
	for _, r := range f.waitRuns(3) {
		c, raw := f.config(r)
		byTarget[r.Annotations[renovate.AnnotationNudgedComponents]] = c
		raws[r.Annotations[renovate.AnnotationNudgedComponents]] = raw
	}
	a, b, c := byTarget["bundle-a"], byTarget["bundle-b"], byTarget["bundle-c"]
	require.Equal(t, []string{renovate.NudgeLabel, "ns-label"}, a.Labels)
	require.True(t, a.Automerge)
	require.True(t, a.PlatformAutomerge)
	require.Equal(t, []string{".*Dockerfile"}, a.CustomManagers[0].FileMatch)
	require.Equal(t, []string{renovate.NudgeLabel, "b-label"}, b.Labels, "the component's ConfigMap replaces the namespace one")
	require.False(t, b.Automerge)
	require.Equal(t, "chore(nudge): ", b.PackageRules[1].CommitMessagePrefix)
	require.Equal(t, []string{".*Dockerfile.*", ".*.yaml", ".*Containerfile.*"}, b.CustomManagers[0].FileMatch)
	require.Equal(t, []string{renovate.NudgeLabel}, c.Labels, "a missing named ConfigMap means defaults, not the namespace one")
	require.False(t, c.PlatformAutomerge)
	require.Equal(t, "", *a.PackageRules[1].AdditionalBranchPrefix, "simple branch from the nudging component")

	ctx, cancel := context.WithTimeout(f.ctx, 5*time.Minute)
	defer cancel()
	_, err := renovatetest.Validate(ctx, raws)
	require.NoError(t, err)
}

// Beside build-service and integration-service, nudgeflow leaves to
// integration-service the immediate edges of its NudgeConfig
// (appstudio.redhat.com/v1beta2) and to build-service the build-nudges-ref edges,
// and runs the validated ones; two bridges delivering one build nudge once.
func TestPeersNeverNudgeTwice(t *testing.T) {
	f := newFixture(t)
	f.component("operand", "", nil)
	f.component("bundle", f.repoURL("github.com", "bundle"), nil)
	f.component("gated", f.repoURL("github.com", "gated"), nil)
	f.credentials("github.com")
	f.shippedNudgeConfig(immediate("operand", "bundle"), validated("operand", "gated", "gate"))
	hidden := map[string]string{labelNotForManager: "true"}
	b := f.build("operand", 1, hidden)
	req := ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(b)}

	exclusive := &builds.BuildReconciler{Client: f.w.Kube, Options: builds.Options{Temporal: f.w.TemporalClient, TaskQueue: taskQueue,
		Peers: builds.Peers{BuildService: true, IntegrationService: true}, Tuning: tuning}}
	res, err := exclusive.Reconcile(f.ctx, req)
	require.NoError(t, err)
	require.NotEmpty(t, f.runID(validatednudge.WorkflowID(f.ns, "operand", "gated")), "nobody else runs validated edges")
	require.Positive(t, res.RequeueAfter, "integration-service's verdict is awaited")
	require.NotContains(t, f.get(b).Annotations, konflux.AnnotationNudgeRouted, "not acknowledged before integration-service's verdict")
	// integration-service nudged bundle (it has basic-auth credentials for it).
	verdict := f.get(b)
	verdict.Annotations[konflux.AnnotationISNudgeProcessed] = "bundle"
	require.NoError(t, f.w.Kube.Update(f.ctx, verdict))
	_, err = exclusive.Reconcile(f.ctx, req)
	require.NoError(t, err)
	require.Empty(t, f.runID(nudgeapi.WorkflowID(f.ns, string(b.UID), "bundle")), "integration-service runs immediate edges")
	require.Equal(t, "gated", f.get(b).Annotations[konflux.AnnotationNudgeRouted], "acknowledged with what it routed")

	// nudgeflow's own NudgeConfig is read by neither service: its immediate edge is
	// nudgeflow's unless the source's build-nudges-ref names the target too
	// (build-service nudges those).
	o := newFixture(t)
	o.component("operand", "", nil, "bundle")
	o.component("bundle", o.repoURL("github.com", "bundle"), nil)
	o.component("other", o.repoURL("github.com", "other"), nil)
	o.credentials("github.com")
	o.nudgeConfig(immediate("operand", "bundle"), immediate("operand", "other"))
	ob := o.build("operand", 1, hidden)
	_, err = exclusive.Reconcile(o.ctx, ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(ob)})
	require.NoError(t, err)
	require.Empty(t, o.runID(nudgeapi.WorkflowID(o.ns, string(ob.UID), "bundle")), "build-service nudges what build-nudges-ref names")
	require.NotEmpty(t, o.runID(nudgeapi.WorkflowID(o.ns, string(ob.UID), "other")), "nobody else nudges an edge only nudgeflow's NudgeConfig holds")
	require.Equal(t, "other", o.get(ob).Annotations[konflux.AnnotationNudgeRouted])

	// Without a NudgeConfig, build-service runs build-nudges-ref: exclusive does nothing.
	g := newFixture(t)
	g.component("operand", "", nil, "bundle")
	g.component("bundle", g.repoURL("github.com", "bundle"), nil)
	g.credentials("github.com")
	gb := g.build("operand", 1, hidden)
	_, err = exclusive.Reconcile(g.ctx, ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(gb)})
	require.NoError(t, err)
	require.Empty(t, g.runID(nudgeapi.WorkflowID(g.ns, string(gb.UID), "bundle")))
	require.Equal(t, builds.RoutedExecutedElsewhere, g.get(gb).Annotations[konflux.AnnotationNudgeRouted])

	// A bridge runs with one set of peers: what the one beside both acknowledged is final
	// for that build. Two bridges with `all` deliver a new build at once: one nudge,
	// one run, one acknowledgement (the second write conflicts, re-reads, and keeps it).
	gb = g.build("operand", 2, hidden)
	all := g.reconciler()
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() {
			_, err := all.Reconcile(g.ctx, ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(gb)})
			errs <- err
		}()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	g.waitRuns(1)
	require.Equal(t, "bundle", g.waitAcknowledged(gb).Annotations[konflux.AnnotationNudgeRouted])
	wfID := nudgeapi.WorkflowID(g.ns, string(gb.UID), "bundle")
	var st nudge.State
	world.Eventually(t, waitFor, "the nudge is running its first attempt", func() (bool, error) {
		return g.query(wfID, nudge.QueryState, &st) == nil && st.Phase == nudgeapi.PhaseRunning, nil
	})
	require.Equal(t, 1, st.Attempt)
	require.Len(t, g.renovateRuns(), 1)
}

// A failed Snapshot is not the last word on a build. Build 1's
// first Snapshot fails; no other passes within the grace (the harness's
// failedSnapshotGrace), so it counts as failed; then a later Snapshot of the gating
// group holding it (integration-service's next one, through the group's Global
// Candidate List) passes while no newer build came: build 1 is nudged after all.
func TestValidatedBuildPassingAfterTheGraceIsNudged(t *testing.T) {
	f := validatedOperandToBundle(t)

	f.pendingBuild(1)
	f.snapshot("s1", "gate", map[string]string{"operand": pullSpec("operand", 1)}, false)
	st := f.validatedState("operand", "bundle", "build 1 counted as failed after the grace", func(st validatednudge.State) bool {
		return st.Pending == nil && st.Failed != nil
	})
	require.Equal(t, []string{digestOf(1) + " (failed in s1; none passed within " + failedSnapshotGrace.String() + ")"}, st.Dropped)
	require.Empty(t, f.renovateRuns(), "a failed digest is not nudged")

	f.snapshot("s2", "gate", map[string]string{"operand": pullSpec("operand", 1), "other": "quay.io/org/other@" + digestOf(98)}, true)
	run := f.waitRuns(1)[0]
	require.Equal(t, "quay.io/org/operand:rev1", run.Annotations[renovate.AnnotationNudgingImage])
	f.finish(run, true)
	st = f.validatedState("operand", "bundle", "the nudge recorded", func(st validatednudge.State) bool { return len(st.Nudges) == 1 })
	require.Equal(t, digestOf(1), st.Nudges[0].Digest)
	require.Equal(t, nudgeapi.PhaseSucceeded, st.Nudges[0].Phase)
	f.w.RecordHistory(t, filepath.Join(localenv.RepoRoot(), "workflows", "validatednudge", "testdata"), t.Name()+"@"+validatednudge.HistoryShape,
		validatednudge.WorkflowID(f.ns, "operand", "bundle"))
}
