package validatednudge

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	"github.com/nudgeflow/nudgeflow/activities/buildcheck/buildchecktest"
	"github.com/nudgeflow/nudgeflow/activities/grouproute"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/workflows/nudge"
)

// A passed build of a batched target (or an edge a ChangeGroup holds) goes to the
// group the batching activity names: no Nudge is started, the record says where.
func TestPassedBuildOfABatchedTargetGoesToItsGroup(t *testing.T) {
	b := build(1)
	nudged, st := runBatching(t, 0, "bundle-batch-x", []step{
		{time.Minute, SignalBuild, b},
		{2 * time.Minute, SignalSnapshotTested, snap("s1", b, true)},
	})
	require.Empty(t, nudged, "no Renovate nudge for a batched build")
	require.Len(t, st.Nudges, 1)
	require.Equal(t, b.Digest, st.Nudges[0].Digest)
	require.Equal(t, PhaseBatched+" in ChangeGroup bundle-batch-x", st.Nudges[0].Phase)
	require.Equal(t, b.Digest, st.LastNudged.Digest, "a later, older build is not taken")
}

var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

func build(n int) Build {
	d := "sha256:" + string(rune('a'+n)) + "000"
	return Build{ImageURL: "quay.io/org/operand:rev" + string(rune('a'+n)), Digest: d, PullSpec: "quay.io/org/operand@" + d,
		BuildPipelineRun: "operand-on-push-" + string(rune('a'+n)), BuildUID: "uid-" + string(rune('a'+n)), BuiltAt: t0.Add(time.Duration(n) * time.Minute)}
}

func snap(name string, b Build, passed bool) SnapshotResult {
	return SnapshotResult{Snapshot: name, ComponentGroup: "gate", Images: []string{b.PullSpec}, Passed: passed}
}

type step struct {
	at  time.Duration
	sig string
	arg any
}

// run plays signals at the given times, cancels the long-lived workflow at the end
// and returns the digests it nudged, in order, plus its final state.
func run(t *testing.T, nudgeTakes time.Duration, steps []step) ([]string, State) {
	return runBatching(t, nudgeTakes, "", steps)
}

// runBatching is run with the batching activity answering that group (empty: no
// group holds the edge, the target is not batched).
func runBatching(t *testing.T, nudgeTakes time.Duration, group string, steps []step) ([]string, State) {
	return runIn(t, buildchecktest.New(), nudgeTakes, group, steps)
}

// runIn is runBatching on a cluster that built what cluster says it built.
func runIn(t *testing.T, cluster *buildchecktest.Fake, nudgeTakes time.Duration, group string, steps []step) ([]string, State) {
	return runInput(t, Input{Namespace: "ns", From: "operand", To: "bundle", GatingGroup: "gate"}, cluster, nudgeTakes, group, steps)
}

// queryState is the workflow's state now.
func queryState(t *testing.T, env *testsuite.TestWorkflowEnvironment) State {
	v, err := env.QueryWorkflow(QueryState)
	require.NoError(t, err)
	var st State
	require.NoError(t, v.Get(&st))
	return st
}

// runInput is runIn starting the workflow with in.
func runInput(t *testing.T, in Input, cluster *buildchecktest.Fake, nudgeTakes time.Duration, group string, steps []step) ([]string, State) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(t0)
	cluster.Register(env)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: WorkflowID("ns", "operand", "bundle")})
	env.RegisterWorkflowWithOptions(nudge.Workflow, workflow.RegisterOptions{Name: nudgeapi.WorkflowName})
	env.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	env.RegisterActivityWithOptions(func(_ context.Context, req grouproute.Request) (grouproute.Result, error) {
		if group == "" {
			return grouproute.Result{}, nil
		}
		return grouproute.Result{ChangeGroup: group, WorkflowID: "changegroup/ns/" + group + "/uid"}, nil
	}, activity.RegisterOptions{Name: grouproute.Activity})
	var nudged []string
	call := env.OnWorkflow(nudgeapi.WorkflowName, mock.Anything, mock.Anything).Return(func(_ workflow.Context, req nudgeapi.Request) (nudgeapi.Result, error) {
		nudged = append(nudged, req.Digest)
		require.Equal(t, "validated", req.Mode)
		require.Equal(t, "bundle", req.Nudged)
		return nudgeapi.Result{Phase: nudgeapi.PhaseSucceeded, Digest: req.Digest}, nil
	})
	if nudgeTakes > 0 {
		call.After(nudgeTakes)
	}
	var end time.Duration
	for _, st := range steps {
		st := st
		if probe, ok := st.arg.(func(State)); ok {
			// A probe: the state at that time.
			env.RegisterDelayedCallback(func() { probe(queryState(t, env)) }, st.at)
			end = max(end, st.at)
			continue
		}
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(st.sig, st.arg) }, st.at)
		end = max(end, st.at)
	}
	var state State
	env.RegisterDelayedCallback(func() {
		state = queryState(t, env)
		env.CancelWorkflow()
	}, end+nudgeTakes+time.Hour)
	env.ExecuteWorkflow(WorkflowName, in)
	require.True(t, env.IsWorkflowCompleted())
	require.True(t, temporal.IsCanceledError(env.GetWorkflowError()), "the test ends the workflow by cancelling it, got %v", env.GetWorkflowError())
	return nudged, state
}

func TestFailedSnapshotDropsTheBuild(t *testing.T) {
	nudged, st := run(t, 0, []step{
		{time.Minute, SignalBuild, build(1)},
		{time.Hour, SignalSnapshotTested, snap("s1", build(1), false)},
	})
	require.Empty(t, nudged, "a digest that did not pass is never nudged")
	require.Nil(t, st.Pending)
	require.Len(t, st.Dropped, 1)
}

func TestPassedSnapshotNudgesExactlyThatDigest(t *testing.T) {
	nudged, st := run(t, 0, []step{
		{time.Minute, SignalBuild, build(1)},
		{time.Hour, SignalSnapshotTested, snap("s1", build(1), true)},
		// A resync resends both: nothing new.
		{2 * time.Hour, SignalBuild, build(1)},
		{2 * time.Hour, SignalSnapshotTested, snap("s1", build(1), true)},
	})
	require.Equal(t, []string{build(1).Digest}, nudged)
	require.Len(t, st.Nudges, 1)
	require.Equal(t, nudgeapi.PhaseSucceeded, st.Nudges[0].Phase)
}

func TestNewerBuildSupersedesPendingOne(t *testing.T) {
	nudged, _ := run(t, 0, []step{
		{time.Minute, SignalBuild, build(1)},
		{2 * time.Minute, SignalBuild, build(2)},
		// The Snapshot with build 1 passes late: build 1 was superseded, not nudged.
		{time.Hour, SignalSnapshotTested, snap("s1", build(1), true)},
		{2 * time.Hour, SignalSnapshotTested, snap("s2", build(2), true)},
		// A straggler: build 1 re-delivered after build 2 was nudged.
		{3 * time.Hour, SignalBuild, build(1)},
	})
	require.Equal(t, []string{build(2).Digest}, nudged)
}

func TestFailThenPassNudgesOnlyThePassingDigestInOrder(t *testing.T) {
	// Nudges take 30 minutes: build 3 passes while build 2's nudge runs and follows it.
	nudged, st := run(t, 30*time.Minute, []step{
		{time.Minute, SignalBuild, build(1)},
		{10 * time.Minute, SignalSnapshotTested, snap("s1", build(1), false)},
		{20 * time.Minute, SignalBuild, build(2)},
		{30 * time.Minute, SignalSnapshotTested, snap("s2", build(2), true)},
		{35 * time.Minute, SignalBuild, build(3)},
		{40 * time.Minute, SignalSnapshotTested, snap("s3", build(3), true)},
		{45 * time.Minute, SignalBuild, build(0)}, // older than everything: ignored
	})
	require.Equal(t, []string{build(2).Digest, build(3).Digest}, nudged)
	require.Equal(t, build(3).Digest, st.LastNudged.Digest)
}

func TestSnapshotBeforeBuildIsRemembered(t *testing.T) {
	nudged, _ := run(t, 0, []step{
		{time.Minute, SignalSnapshotTested, snap("s1", build(1), true)},
		{2 * time.Minute, SignalBuild, build(1)},
	})
	require.Equal(t, []string{build(1).Digest}, nudged)
}

// Continue-as-new carries the pending build and the dedupe sets.
func TestContinueAsNewCarriesState(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(nudge.Workflow, workflow.RegisterOptions{Name: nudgeapi.WorkflowName})
	env.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	buildchecktest.New().Register(env)
	env.SetContinueAsNewSuggested(true)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalBuild, build(1)) }, time.Minute)
	env.ExecuteWorkflow(WorkflowName, Input{Namespace: "ns", From: "operand", To: "bundle", GatingGroup: "gate"})
	err := env.GetWorkflowError()
	require.True(t, workflow.IsContinueAsNewError(err), "got %v", err)
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, err, &can)
	var next Input
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.State.Pending)
	require.Equal(t, build(1).Digest, next.State.Pending.Digest)
	require.Len(t, next.State.SeenBuilds, 1)
	require.Equal(t, "operand", next.From)
}

// A build is verified when its signal arrives, once: one the cluster did not build
// is never held, offered to a group nor nudged, even when a Snapshot "passes" it;
// its verdict is in the state and its refusal's Event goes on the target.
func TestBuildNobodyBuiltIsNeverHeld(t *testing.T) {
	cluster := buildchecktest.New()
	forged := build(5)
	forged.BuildPipelineRun, forged.BuildUID = "", "forged"
	cluster.Refuse(forged.Digest)
	nudged, st := runIn(t, cluster, 0, "", []step{
		{time.Minute, SignalBuild, build(1)},
		{2 * time.Minute, SignalBuild, forged}, // newer: it would supersede build 1
		{3 * time.Minute, SignalBuild, forged}, // redelivered
		{time.Hour, SignalSnapshotTested, snap("s1", forged, true)},
		{2 * time.Hour, SignalSnapshotTested, snap("s2", build(1), true)},
	})
	require.Equal(t, []string{build(1).Digest}, nudged, "build 1 was held and nudged; the forged one never")
	require.Equal(t, 1, cluster.Count(forged.Digest), "a redelivered refused build is not verified again")
	require.Equal(t, 1, cluster.Count(build(1).Digest), "a verified build is not verified again either")
	require.Len(t, st.BuildVerdicts, 2)
	require.True(t, st.BuildVerdicts[0].Verified)
	require.Equal(t, BuildVerdict{Digest: forged.Digest, Verdict: buildcheck.Verdict{Reason: "no build of operand produced " + forged.Digest}}, st.BuildVerdicts[1])
	req := cluster.Asked()[0]
	require.Equal(t, buildcheck.Subject{Kind: buildcheck.KindComponent, Name: "bundle"}, req.Subject)
	require.Equal(t, "operand", req.Component)
	require.Equal(t, "ns", req.Namespace)
}

// probe is a step that checks the state at its time.
func probe(at time.Duration, check func(State)) step { return step{at: at, arg: check} }

// A failed Snapshot is not the last word: a sibling Snapshot holding the build that
// passes within the grace (integration-service created it after the failed one)
// delivers the build, which meanwhile waits, failing but pending.
func TestFailedSnapshotThenPassingSiblingDeliversTheBuild(t *testing.T) {
	b := build(1)
	nudged, st := run(t, 0, []step{
		{time.Minute, SignalBuild, b},
		{10 * time.Minute, SignalSnapshotTested, snap("app-snapshot", b, false)},
		probe(15*time.Minute, func(st State) {
			require.NotNil(t, st.Pending, "within the grace the build still waits")
			require.NotNil(t, st.Failing)
			require.Equal(t, "app-snapshot", st.Failing.Snapshot)
			require.Equal(t, t0.Add(10*time.Minute), st.Failing.At.UTC(), "the grace counts from the first failed verdict")
			require.Empty(t, st.Dropped)
		}),
		{18 * time.Minute, SignalSnapshotTested, snap("group-snapshot", b, true)},
	})
	require.Equal(t, []string{b.Digest}, nudged)
	require.Empty(t, st.Dropped, "the build never counted as failed")
	require.Nil(t, st.Failing)
}

// With no pass within the grace the build counts as failed (dropped, never
// nudged); a pass that arrives after it, while no newer build came, still
// delivers it.
func TestFailedBuildCountsAsFailedAfterTheGraceAndALatePassStillDelivers(t *testing.T) {
	b := build(1)
	nudged, st := run(t, 0, []step{
		{time.Minute, SignalBuild, b},
		{10 * time.Minute, SignalSnapshotTested, snap("s1", b, false)},
		{12 * time.Minute, SignalSnapshotTested, snap("s2", b, false)},
		probe(10*time.Minute+DefaultFailedSnapshotGrace-time.Second, func(st State) {
			require.NotNil(t, st.Pending, "a second failure does not restart nor shorten the grace")
			require.Empty(t, st.Dropped)
		}),
		probe(10*time.Minute+DefaultFailedSnapshotGrace+time.Second, func(st State) {
			require.Nil(t, st.Pending)
			require.Equal(t, []string{b.Digest + " (failed in s1; none passed within 10m0s)"}, st.Dropped)
			require.Equal(t, PhaseIdle, st.phase())
		}),
		// A Snapshot whose tests outlasted the grace passes: nothing newer came.
		{time.Hour, SignalSnapshotTested, snap("s3", b, true)},
	})
	require.Equal(t, []string{b.Digest}, nudged)
	require.Nil(t, st.Failed)
	require.Equal(t, b.Digest+" (revived: passed in s3)", st.Dropped[1])
}

// After the grace with no pass and a newer build, the failed build stays dropped:
// a late pass of it nudges nothing (order: never an older build after a newer one).
func TestFailedBuildSupersededIsNotRevived(t *testing.T) {
	nudged, st := run(t, 0, []step{
		{time.Minute, SignalBuild, build(1)},
		{10 * time.Minute, SignalSnapshotTested, snap("s1", build(1), false)},
		{30 * time.Minute, SignalBuild, build(2)},
		{40 * time.Minute, SignalSnapshotTested, snap("s1-late", build(1), true)},
	})
	require.Empty(t, nudged)
	require.Equal(t, build(2).Digest, st.Pending.Digest)
	require.Len(t, st.Dropped, 1)
}

// The grace is the Input's when set.
func TestFailedSnapshotGraceFromInput(t *testing.T) {
	in := Input{Namespace: "ns", From: "operand", To: "bundle", GatingGroup: "gate", FailedSnapshotGrace: 30 * time.Second}
	nudged, _ := runInput(t, in, buildchecktest.New(), 0, "", []step{
		{time.Minute, SignalBuild, build(1)},
		{2 * time.Minute, SignalSnapshotTested, snap("s1", build(1), false)},
		probe(2*time.Minute+31*time.Second, func(st State) {
			require.Nil(t, st.Pending)
			require.Equal(t, []string{build(1).Digest + " (failed in s1; none passed within 30s)"}, st.Dropped)
		}),
	})
	require.Empty(t, nudged)
}

// Verdicts that came before the build all count: a failed and a passed Snapshot of
// it deliver it, whatever their order.
func TestVerdictsBeforeTheBuildDeliverOnAnyPass(t *testing.T) {
	b := build(1)
	nudged, _ := run(t, 0, []step{
		{time.Minute, SignalSnapshotTested, snap("s-pass", b, true)},
		{2 * time.Minute, SignalSnapshotTested, snap("s-fail", b, false)},
		{3 * time.Minute, SignalBuild, b},
	})
	require.Equal(t, []string{b.Digest}, nudged)
}

// A failing build carried across continue-as-new keeps its grace: the new run
// drops it at once when the grace that began in the old one has ended.
func TestFailingBuildAcrossContinueAsNew(t *testing.T) {
	pending := build(1)
	in := Input{Namespace: "ns", From: "operand", To: "bundle", GatingGroup: "gate",
		State: State{Pending: &pending, Failing: &Failure{Snapshot: "s1", At: t0.Add(-DefaultFailedSnapshotGrace - time.Minute)}}}
	nudged, _ := runInput(t, in, buildchecktest.New(), 0, "", []step{
		probe(time.Second, func(st State) {
			require.Nil(t, st.Pending, "the grace ended before this run: the build counts as failed at once")
			require.NotNil(t, st.Failed)
			require.Len(t, st.Dropped, 1)
		}),
	})
	require.Empty(t, nudged)
}
