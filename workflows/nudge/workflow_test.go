package nudge

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	"github.com/nudgeflow/nudgeflow/activities/buildcheck/buildchecktest"
	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

const testID = "nudge/ns/build-uid/bundle"

func request() nudgeapi.Request {
	return nudgeapi.Request{Namespace: "ns", Nudging: "operand", Nudged: "bundle", Mode: "immediate", Build: nudgeapi.Build{
		ImageURL: "quay.io/org/operand:abc", Digest: "sha256:1111", PullSpec: "quay.io/org/operand@sha256:1111",
		BuildPipelineRun: "operand-on-push-x", BuildUID: "build-uid"}}
}

type recorder struct {
	reasons  []string
	outcomes []renovateapi.Outcome
	verifier *buildchecktest.Fake
}

func setup(t *testing.T) (*testsuite.TestWorkflowEnvironment, *renovate.Activities, *recorder, *[]renovateapi.LaunchRequest) {
	return setupWithMetrics(t, nil)
}

// setupWithMetrics records the workflow's metrics on m (nil: none).
func setupWithMetrics(t *testing.T, m client.MetricsHandler) (*testsuite.TestWorkflowEnvironment, *renovate.Activities, *recorder, *[]renovateapi.LaunchRequest) {
	var s testsuite.WorkflowTestSuite
	if m != nil {
		s.SetMetricsHandler(m)
	}
	return setupOn(t, s.NewTestWorkflowEnvironment(), &nudgeapi.WriterChoice{Writer: nudgeapi.WriterRenovate, Setting: "renovate",
		Reason: "these tests pin the Renovate writer"})
}

// setupOn registers on env the fake activities, and a writer choice answering
// choice (nil: none), and what register adds (activities register before mocks).
func setupOn(t *testing.T, env *testsuite.TestWorkflowEnvironment, choice *nudgeapi.WriterChoice,
	register ...func(*testsuite.TestWorkflowEnvironment)) (*testsuite.TestWorkflowEnvironment, *renovate.Activities, *recorder, *[]renovateapi.LaunchRequest) {
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testID})
	a := &renovate.Activities{}
	env.RegisterActivity(a)
	rec := &recorder{verifier: buildchecktest.New().Register(env)}
	if choice != nil {
		choose(env, *choice)
	}
	for _, r := range register {
		r(env)
	}
	launched := &[]renovateapi.LaunchRequest{}
	env.OnActivity(a.LaunchRenovate, mock.Anything, mock.Anything).Return(func(_ context.Context, r renovateapi.LaunchRequest) (renovateapi.LaunchResult, error) {
		*launched = append(*launched, r)
		return renovateapi.LaunchResult{Name: r.Name, Created: true}, nil
	}).Maybe()
	env.OnActivity(a.RecordNudgeOutcome, mock.Anything, mock.Anything).Return(func(_ context.Context, o renovateapi.Outcome) error {
		rec.reasons = append(rec.reasons, o.Reason)
		rec.outcomes = append(rec.outcomes, o)
		return nil
	}).Maybe()
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env, a, rec, launched
}

// The bridge's signals end the runs: two failures, then success, with backoff in
// between. One Event per outcome, a new deterministic run name per attempt.
func TestFailsTwiceThenSucceedsBySignal(t *testing.T) {
	env, _, rec, launched := setup(t)
	req := request()
	req.PollInterval = 24 * time.Hour // the signal, not the poll, ends each run
	finish := func(attempt int, ok bool) func() {
		return func() {
			env.SignalWorkflow(nudgeapi.SignalRunFinished, renovaterun.RunStatus{Name: renovateapi.RunName(testID, attempt), Done: true, Succeeded: ok, Reason: "Failed"})
		}
	}
	// Backoff 5m then 10m: attempt 2 launches at ~5m, attempt 3 at ~20m.
	env.RegisterDelayedCallback(finish(1, false), time.Minute)
	env.RegisterDelayedCallback(finish(2, false), 8*time.Minute)
	env.RegisterDelayedCallback(finish(3, true), 25*time.Minute)
	env.ExecuteWorkflow(Workflow, req)

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res nudgeapi.Result
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, nudgeapi.PhaseSucceeded, res.Phase)
	require.Equal(t, 3, res.Attempts)
	require.Equal(t, []string{ReasonRunFailed, ReasonRunFailed, ReasonSucceeded}, rec.reasons)
	require.Len(t, *launched, 3)
	for i, l := range *launched {
		require.Equal(t, renovateapi.RunName(testID, i+1), l.Name)
		require.Equal(t, testID, l.WorkflowID)
	}
	require.NotEqual(t, (*launched)[0].Name, (*launched)[1].Name)
}

// Without any signal the polling fallback finds the end; after MaxAttempts failures
// the nudge ends Failed with a Warning event and a workflow error, never silently.
func TestPollingFallbackAndGivingUp(t *testing.T) {
	env, a, rec, launched := setup(t)
	env.OnActivity(a.RenovateRunStatus, mock.Anything, "ns", mock.Anything).Return(func(_ context.Context, _ string, name string) (renovaterun.RunStatus, error) {
		return renovaterun.RunStatus{Name: name, Done: true, Succeeded: false, Reason: "Failed", Message: "renovate exited 1"}, nil
	})
	req := request()
	req.MaxAttempts = 2
	env.ExecuteWorkflow(Workflow, req)

	require.True(t, env.IsWorkflowCompleted())
	err := env.GetWorkflowError()
	require.Error(t, err)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, ReasonFailed, appErr.Type())
	require.Equal(t, []string{ReasonRunFailed, ReasonFailed}, rec.reasons)
	require.Len(t, *launched, 2)
	v, qerr := env.QueryWorkflow(QueryState)
	require.NoError(t, qerr)
	var st State
	require.NoError(t, v.Get(&st))
	require.Equal(t, nudgeapi.PhaseFailed, st.Phase)
}

// A launch that can never work (no credentials) fails at once with one event.
func TestLaunchRefusedIsRecorded(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testID})
	a := &renovate.Activities{}
	env.RegisterActivity(a)
	buildchecktest.New().Register(env)
	pinRenovate(env)
	var reasons []string
	env.OnActivity(a.LaunchRenovate, mock.Anything, mock.Anything).Return(renovateapi.LaunchResult{},
		temporal.NewNonRetryableApplicationError("no SCM credentials for gitlab.com/org/repo", "NoCredentials", nil)).Once()
	env.OnActivity(a.RecordNudgeOutcome, mock.Anything, mock.Anything).Return(func(_ context.Context, o renovateapi.Outcome) error {
		reasons = append(reasons, o.Reason)
		require.True(t, o.Warning)
		require.Contains(t, o.Message, "no SCM credentials")
		require.NotContains(t, o.Message, "scheduledEventID", "the cause, not the SDK's wrapping")
		return nil
	})
	env.ExecuteWorkflow(Workflow, request())
	require.Error(t, env.GetWorkflowError())
	require.Equal(t, []string{ReasonFailed}, reasons)
	env.AssertExpectations(t)
}

// A nudge of a repository the namespace does not own is refused at launch (the
// activity records the RepositoryNotOwned Warning Event on the Component): the
// nudge fails at once, and its NudgeFailed Event carries what to create, so the
// build is reported, not dropped.
func TestLaunchOfARepositoryTheNamespaceDoesNotOwnIsReported(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testID})
	buildchecktest.New().Register(env) // the build is the cluster's: only the launch is refused
	pinRenovate(env)
	a := &renovate.Activities{}
	env.RegisterActivity(a)
	env.OnActivity(a.LaunchRenovate, mock.Anything, mock.Anything).Return(renovateapi.LaunchResult{},
		temporal.NewNonRetryableApplicationError("namespace tenant does not own repository https://github.com/other/bundle, so nudgeflow neither writes to it "+
			"nor mints a token for it: no Pipelines as Code Repository in namespace tenant names it. Create a Repository", ownership.ErrorType, nil)).Once()
	var outcomes []renovateapi.Outcome
	env.OnActivity(a.RecordNudgeOutcome, mock.Anything, mock.Anything).Return(func(_ context.Context, o renovateapi.Outcome) error {
		outcomes = append(outcomes, o)
		return nil
	})
	env.ExecuteWorkflow(Workflow, request())
	require.Error(t, env.GetWorkflowError())
	require.Len(t, outcomes, 1, "one launch, not retried")
	require.Equal(t, ReasonFailed, outcomes[0].Reason)
	require.True(t, outcomes[0].Warning)
	require.Contains(t, outcomes[0].Message, "does not own repository https://github.com/other/bundle")
	require.Contains(t, outcomes[0].Message, "Create a Repository")
	env.AssertExpectations(t)
}

// A signal for a run that ended before the workflow waited for it is not lost.
func TestEarlySignalIsKept(t *testing.T) {
	env, _, rec, _ := setup(t)
	req := request()
	req.PollInterval = 24 * time.Hour
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(nudgeapi.SignalRunFinished, renovaterun.RunStatus{Name: renovateapi.RunName(testID, 1), Done: true, Succeeded: true})
	}, 0)
	env.ExecuteWorkflow(Workflow, req)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{ReasonSucceeded}, rec.reasons)
}

// A ChangeGroup held the Renovate run at admission and took its build: the nudge
// ends there, one run, not a failure, and nothing is launched again.
func TestRunHeldByChangeGroupEndsTheNudge(t *testing.T) {
	env, _, rec, launched := setup(t)
	res := endFirstRun(t, env, renovaterun.RunStatus{HeldBy: "bundle-update", Reason: renovaterun.ReasonHeldByChangeGroup})
	require.Equal(t, nudgeapi.PhaseHeldByChangeGroup, res.Phase)
	require.Contains(t, res.Reason, "bundle-update")
	require.Equal(t, 1, res.Attempts)
	require.Len(t, *launched, 1, "no second run")
	require.Equal(t, []string{reasonHeld}, rec.reasons)
}

// A held run whose build no group took (the group ended in between) was never
// tried: the nudge launches again, even when it was its last attempt, so the
// build is still nudged.
func TestRunHeldAndReturnedIsTriedAgain(t *testing.T) {
	env, _, rec, launched := setup(t)
	req := request()
	req.MaxAttempts = 1
	req.PollInterval = 24 * time.Hour
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(nudgeapi.SignalRunFinished, renovaterun.RunStatus{Name: renovateapi.RunName(testID, 1), Done: true, Reason: renovaterun.ReasonHeldReturned})
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(nudgeapi.SignalRunFinished, renovaterun.RunStatus{Name: renovateapi.RunName(testID, 2), Done: true, Succeeded: true})
	}, 10*time.Minute)
	env.ExecuteWorkflow(Workflow, req)

	require.NoError(t, env.GetWorkflowError())
	var res nudgeapi.Result
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, nudgeapi.PhaseSucceeded, res.Phase)
	require.Len(t, *launched, 2)
	require.Equal(t, []string{ReasonRunFailed, ReasonSucceeded}, rec.reasons)
}

// Someone cancelled the Renovate run: the nudge ends Cancelled after that one run,
// with a Warning Event saying the digest was not nudged, and is not launched again
// (before, the cancel counted as a failed attempt and the run came back).
func TestCancelledRunEndsTheNudge(t *testing.T) {
	env, _, rec, launched := setup(t)
	outcomes := &rec.outcomes
	res := endFirstRun(t, env, renovaterun.RunStatus{Cancelled: true, Reason: "Cancelled", Message: "PipelineRun was cancelled"})
	require.Equal(t, nudgeapi.PhaseCancelled, res.Phase)
	require.Equal(t, 1, res.Attempts)
	require.Len(t, *launched, 1, "no second run")
	require.Len(t, *outcomes, 1)
	o := (*outcomes)[0]
	require.Equal(t, ReasonCancelled, o.Reason)
	require.True(t, o.Warning, "the digest was not nudged: a Warning")
	require.Contains(t, o.Message, "sha256:1111")
	require.Contains(t, o.Message, "not retried")
}

// endFirstRun runs the nudge whose first Renovate run ends with status (signalled
// a minute in, never polled) and returns its result once it completed without error.
func endFirstRun(t *testing.T, env *testsuite.TestWorkflowEnvironment, status renovaterun.RunStatus) nudgeapi.Result {
	t.Helper()
	req := request()
	req.PollInterval = 24 * time.Hour
	status.Name, status.Done = renovateapi.RunName(testID, 1), true
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(nudgeapi.SignalRunFinished, status) }, time.Minute)
	env.ExecuteWorkflow(Workflow, req)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res nudgeapi.Result
	require.NoError(t, env.GetWorkflowResult(&res))
	return res
}

// A newer build of the nudging component already nudges the target: the launch is
// refused and the nudge ends Superseded (a Normal Event, no error, no retry)
// rather than Failed; the newer build carries the change.
func TestSupersededAtLaunchEndsTheNudge(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testID})
	a := &renovate.Activities{}
	env.RegisterActivity(a)
	buildchecktest.New().Register(env)
	pinRenovate(env)
	var outcomes []renovateapi.Outcome
	env.OnActivity(a.LaunchRenovate, mock.Anything, mock.Anything).Return(renovateapi.LaunchResult{},
		temporal.NewNonRetryableApplicationError("a newer build of operand already nudges bundle", renovateapi.ErrorTypeSuperseded, nil, "renovate-nudge-newer-1")).Once()
	env.OnActivity(a.RecordNudgeOutcome, mock.Anything, mock.Anything).Return(func(_ context.Context, o renovateapi.Outcome) error {
		outcomes = append(outcomes, o)
		return nil
	})
	req := request()
	req.BuiltAt = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	env.ExecuteWorkflow(Workflow, req)
	require.NoError(t, env.GetWorkflowError())
	var res nudgeapi.Result
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, nudgeapi.PhaseSuperseded, res.Phase)
	require.Len(t, outcomes, 1)
	require.Equal(t, ReasonSuperseded, outcomes[0].Reason)
	require.False(t, outcomes[0].Warning)
	require.Contains(t, outcomes[0].Message, "renovate-nudge-newer-1")
	env.AssertExpectations(t)
}

// The run was stopped for a newer build's run: the nudge ends Superseded, not
// Cancelled, and is not launched again.
func TestSupersededRunEndsTheNudge(t *testing.T) {
	env, _, rec, launched := setup(t)
	res := endFirstRun(t, env, renovaterun.RunStatus{SupersededBy: "renovate-nudge-newer-1", Reason: "Cancelled", Message: "PipelineRun was cancelled"})
	require.Equal(t, nudgeapi.PhaseSuperseded, res.Phase)
	require.Len(t, *launched, 1, "no second run")
	require.Equal(t, []string{ReasonSuperseded}, rec.reasons)
	require.False(t, rec.outcomes[0].Warning)
	require.Contains(t, rec.outcomes[0].Message, "renovate-nudge-newer-1")
}

// The run's step found a newer build on the nudge branch and ran no Renovate
// (outcome superseded:<run>, exit 0): StatusOf reads that run as superseded, so
// the nudge ends Superseded, no forge is asked whether it delivered, and it is
// not launched again.
func TestRunItsStepFoundSupersededEndsTheNudge(t *testing.T) {
	env, _, rec, launched := setup(t)
	var started []string
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		started = append(started, info.ActivityType.Name)
	})
	plr, _ := renovate.PipelineRunFor(&renovate.Activities{}, renovateapi.LaunchRequest{Name: renovateapi.RunName(testID, 1), Namespace: "tenant"},
		false, false, renovate.BranchCheck{})
	plr.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: "Succeeded"})
	plr.Status.Results = []tektonv1.PipelineRunResult{{Name: renovaterun.ResultOutcome,
		Value: *tektonv1.NewStructuredValues(renovaterun.OutcomeSuperseded + ":renovate-nudge-newer-1")}}
	res := endFirstRun(t, env, renovaterun.StatusOf(plr))
	require.Equal(t, nudgeapi.PhaseSuperseded, res.Phase, res.Reason)
	require.Len(t, *launched, 1, "no second run")
	require.Equal(t, []string{ReasonSuperseded}, rec.reasons)
	require.False(t, rec.outcomes[0].Warning)
	require.Contains(t, rec.outcomes[0].Message, "renovate-nudge-newer-1")
	require.NotContains(t, started, "CheckDelivery", "no forge is asked")
	require.Contains(t, started, "LaunchRenovate", "the listener sees the activities")
}

// Every launch carries the build's start, which orders an edge's runs.
func TestLaunchCarriesTheBuildStart(t *testing.T) {
	env, _, _, launched := setup(t)
	req := request()
	req.BuiltAt = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	req.PollInterval = 24 * time.Hour
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(nudgeapi.SignalRunFinished, renovaterun.RunStatus{Name: renovateapi.RunName(testID, 1), Done: true, Succeeded: true})
	}, time.Minute)
	env.ExecuteWorkflow(Workflow, req)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, req.BuiltAt, (*launched)[0].BuiltAt)
}

// The build is verified before anything is launched, once, with its refusal going
// on the nudged Component; a verified build nudges as before.
func TestBuildIsVerifiedBeforeTheLaunch(t *testing.T) {
	env, _, rec, launched := setup(t)
	res := endFirstRun(t, env, renovaterun.RunStatus{Succeeded: true})
	require.Equal(t, nudgeapi.PhaseSucceeded, res.Phase)
	require.Len(t, *launched, 1)
	require.Len(t, rec.verifier.Asked(), 1)
	req := rec.verifier.Asked()[0]
	require.Equal(t, buildcheck.Request{Namespace: "ns", Component: "operand", Build: imagebuild.Build{Digest: "sha256:1111", PullSpec: "quay.io/org/operand@sha256:1111",
		ImageURL: "quay.io/org/operand:abc", BuildPipelineRun: "operand-on-push-x", BuildUID: "build-uid"}, Workflow: testID,
		Subject: buildcheck.Subject{Kind: buildcheck.KindComponent, Name: "bundle"}}, req)
}

// A Nudge started with a digest nobody built launches nothing: it ends
// BuildNotVerified, the verdict in its state, without an error (nothing to retry).
func TestBuildNobodyBuiltIsNotNudged(t *testing.T) {
	env, _, rec, launched := setup(t)
	rec.verifier.Refuse("sha256:1111")
	env.ExecuteWorkflow(Workflow, request())
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res nudgeapi.Result
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, nudgeapi.PhaseBuildNotVerified, res.Phase)
	require.Contains(t, res.Reason, "no build of operand produced sha256:1111")
	require.Empty(t, *launched, "no Renovate run")
	require.Empty(t, rec.reasons, "the BuildNotVerified Event is the verification's, no second one")
	v, err := env.QueryWorkflow(QueryState)
	require.NoError(t, err)
	var st State
	require.NoError(t, v.Get(&st))
	require.Equal(t, nudgeapi.PhaseBuildNotVerified, st.Phase)
	require.NotNil(t, st.Verdict)
	require.False(t, st.Verdict.Verified)
}
