package nudge

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/contracts/nudgewriteapi"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// choose registers a writer choice that answers c (the cluster's answer).
func choose(env *testsuite.TestWorkflowEnvironment, c nudgeapi.WriterChoice) *[]nudgeapi.WriterChoiceRequest {
	asked := &[]nudgeapi.WriterChoiceRequest{}
	env.RegisterActivityWithOptions(func(_ context.Context, r nudgeapi.WriterChoiceRequest) (nudgeapi.WriterChoice, error) {
		*asked = append(*asked, r)
		return c, nil
	}, activity.RegisterOptions{Name: nudgeapi.ChooseWriterActivity})
	return asked
}

// pinRenovate makes the cluster choose Renovate, as the tests written before the
// direct writer expect.
func pinRenovate(env *testsuite.TestWorkflowEnvironment) {
	choose(env, nudgeapi.WriterChoice{Writer: nudgeapi.WriterRenovate, Setting: "renovate", Reason: "these tests pin the Renovate writer"})
}

// fakeWriter stands in for activities/nudgewrite under its registered name.
type fakeWriter struct {
	asked  []nudgewriteapi.WriteRequest
	result nudgewriteapi.WriteResult
	err    error
}

func (f *fakeWriter) register(env *testsuite.TestWorkflowEnvironment) {
	env.RegisterActivityWithOptions(func(_ context.Context, r nudgewriteapi.WriteRequest) (nudgewriteapi.WriteResult, error) {
		f.asked = append(f.asked, r)
		return f.result, f.err
	}, activity.RegisterOptions{Name: nudgewriteapi.WriteActivity})
}

// directEnv is setup's world with the cluster choosing the direct writer under
// setting and the writer answering w (or failing with err).
func directEnv(t *testing.T, setting string, w nudgewriteapi.WriteResult, err error) (*testsuite.TestWorkflowEnvironment, *recorder, *[]renovateapi.LaunchRequest, *fakeWriter) {
	var s testsuite.WorkflowTestSuite
	fw := &fakeWriter{result: w, err: err}
	env, _, rec, launched := setupOn(t, s.NewTestWorkflowEnvironment(), &nudgeapi.WriterChoice{Writer: nudgeapi.WriterDirect, Setting: setting,
		Reason: "immediateWriter " + setting + " set by spec.immediateWriter of NudgeConfig nudge-config"}, fw.register)
	return env, rec, launched, fw
}

func state(t *testing.T, env *testsuite.TestWorkflowEnvironment) State {
	t.Helper()
	v, err := env.QueryWorkflow(QueryState)
	require.NoError(t, err)
	var st State
	require.NoError(t, v.Get(&st))
	return st
}

func resultOf(t *testing.T, env *testsuite.TestWorkflowEnvironment) nudgeapi.Result {
	t.Helper()
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res nudgeapi.Result
	require.NoError(t, env.GetWorkflowResult(&res))
	return res
}

// The direct writer opened, updated, or found the digest current: the nudge
// succeeds with no Renovate run, one NudgedDirectly Event naming the pull
// request, and the result and state naming the direct writer and why.
func TestDirectWriterDeliveredEndsTheNudge(t *testing.T) {
	for _, outcome := range []string{nudgewriteapi.OutcomeOpened, nudgewriteapi.OutcomeUpdated, nudgewriteapi.OutcomeAlreadyCurrent} {
		t.Run(outcome, func(t *testing.T) {
			env, rec, launched, w := directEnv(t, "auto", nudgewriteapi.WriteResult{Outcome: outcome,
				Branch: "konflux/component-updates/operand", PR: 7, URL: "https://github.com/org/bundle/pull/7"}, nil)
			env.ExecuteWorkflow(Workflow, request())
			res := resultOf(t, env)
			require.Equal(t, nudgeapi.PhaseSucceeded, res.Phase)
			require.Equal(t, nudgeapi.WriterDirect, res.Writer)
			require.Contains(t, res.WriterReason, "spec.immediateWriter")
			require.Equal(t, "https://github.com/org/bundle/pull/7", res.PullRequest)
			require.Empty(t, *launched, "no Renovate run")
			require.Empty(t, res.PipelineRuns)
			require.Len(t, w.asked, 1)
			require.Equal(t, nudgewriteapi.WriteRequest{Namespace: "ns", WorkflowID: testID, Nudging: "operand", Nudged: "bundle", Build: request().Build}, w.asked[0])
			require.Equal(t, []string{ReasonNudgedDirectly}, rec.reasons)
			require.False(t, rec.outcomes[0].Warning)
			require.Contains(t, rec.outcomes[0].Message, "the direct writer")
			require.Contains(t, rec.outcomes[0].Message, "pull/7")
			st := state(t, env)
			require.Equal(t, nudgeapi.WriterDirect, st.Writer)
			require.Equal(t, outcome, st.Write.Outcome)
		})
	}
}

// A newer build already on the branch: Superseded, no Renovate run.
func TestDirectWriterSupersededEndsTheNudge(t *testing.T) {
	env, rec, launched, _ := directEnv(t, "auto", nudgewriteapi.WriteResult{Outcome: nudgewriteapi.OutcomeSuperseded, Branch: "konflux/component-updates/operand"}, nil)
	env.ExecuteWorkflow(Workflow, request())
	res := resultOf(t, env)
	require.Equal(t, nudgeapi.PhaseSuperseded, res.Phase)
	require.Empty(t, *launched)
	require.Equal(t, []string{ReasonSuperseded}, rec.reasons)
	require.False(t, rec.outcomes[0].Warning)
}

// A person's commit on the branch: nothing is written, no Renovate run (Renovate
// refuses an edited branch too), a Warning that says what to do.
func TestDirectWriterLeavesAPersonsCommit(t *testing.T) {
	env, rec, launched, _ := directEnv(t, "auto", nudgewriteapi.WriteResult{Outcome: nudgewriteapi.OutcomePersonCommitted,
		Branch: "konflux/component-updates/operand", PR: 3, Reason: "commit 1234 by Jane"}, nil)
	env.ExecuteWorkflow(Workflow, request())
	res := resultOf(t, env)
	require.Equal(t, nudgeapi.PhaseBranchEdited, res.Phase)
	require.Empty(t, *launched)
	require.Equal(t, []string{reasonBranchEdited}, rec.reasons)
	require.True(t, rec.outcomes[0].Warning)
	require.Contains(t, rec.outcomes[0].Message, "commit 1234 by Jane")
	require.Contains(t, rec.outcomes[0].Message, "next build of operand")
}

// Fallback under auto: the Renovate run is launched as before, after a
// WriterFallback Event saying why; the result names Renovate and the reason.
func TestDirectWriterFallbackLaunchesRenovate(t *testing.T) {
	env, rec, launched, _ := directEnv(t, "auto", nudgewriteapi.WriteResult{Outcome: nudgewriteapi.OutcomeFallback,
		Reason: "renovate.json sets automergeType branch, which the direct writer does not do"}, nil)
	req := request()
	req.PollInterval = 24 * time.Hour
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(nudgeapi.SignalRunFinished, renovaterun.RunStatus{Name: renovateapi.RunName(testID, 1), Done: true, Succeeded: true})
	}, time.Minute)
	env.ExecuteWorkflow(Workflow, req)
	res := resultOf(t, env)
	require.Equal(t, nudgeapi.PhaseSucceeded, res.Phase)
	require.Len(t, *launched, 1)
	require.Equal(t, renovateapi.RunName(testID, 1), (*launched)[0].Name, "the run is named as before: attempt 1")
	require.Equal(t, []string{reasonWriterFallback, ReasonSucceeded}, rec.reasons)
	require.False(t, rec.outcomes[0].Warning)
	require.Contains(t, rec.outcomes[0].Message, "automergeType branch")
	require.Equal(t, nudgeapi.WriterRenovate, res.Writer)
	require.Contains(t, res.WriterReason, "automergeType branch")
}

// A write that failed for good under auto (a forge outage past the retries, a
// refusal): the build is not lost, Renovate nudges it, after a Warning.
func TestDirectWriterFailureFallsBackToRenovate(t *testing.T) {
	env, rec, launched, w := directEnv(t, "auto", nudgewriteapi.WriteResult{},
		temporal.NewNonRetryableApplicationError("the forge refused the push", nudgewriteapi.ErrorTypeRefused, nil))
	req := request()
	req.PollInterval = 24 * time.Hour
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(nudgeapi.SignalRunFinished, renovaterun.RunStatus{Name: renovateapi.RunName(testID, 1), Done: true, Succeeded: true})
	}, time.Minute)
	env.ExecuteWorkflow(Workflow, req)
	res := resultOf(t, env)
	require.Equal(t, nudgeapi.PhaseSucceeded, res.Phase)
	require.Len(t, w.asked, 1, "a non-retryable error is not retried")
	require.Len(t, *launched, 1)
	require.Equal(t, []string{reasonWriterFallback, ReasonSucceeded}, rec.reasons)
	require.True(t, rec.outcomes[0].Warning)
	require.Contains(t, rec.outcomes[0].Message, "the forge refused the push")
	require.NotContains(t, rec.outcomes[0].Message, "scheduledEventID")
	require.Equal(t, nudgeapi.WriterRenovate, res.Writer)
}

// A retryable failure is retried before the fallback.
func TestDirectWriterRetriesAForgeBlip(t *testing.T) {
	env, rec, launched, w := directEnv(t, "auto", nudgewriteapi.WriteResult{}, errors.New("502 Bad Gateway"))
	req := request()
	req.PollInterval = 24 * time.Hour
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(nudgeapi.SignalRunFinished, renovaterun.RunStatus{Name: renovateapi.RunName(testID, 1), Done: true, Succeeded: true})
	}, time.Hour)
	env.ExecuteWorkflow(Workflow, req)
	res := resultOf(t, env)
	require.Equal(t, nudgeapi.PhaseSucceeded, res.Phase)
	require.Len(t, w.asked, int(writeOptions("").RetryPolicy.MaximumAttempts))
	require.Len(t, *launched, 1)
	require.Equal(t, []string{reasonWriterFallback, ReasonSucceeded}, rec.reasons)
}

// immediateWriter direct asked for no Renovate run: a fallback or a failed write
// ends the nudge Failed with a Warning Event that names why, and nothing is
// launched.
func TestDirectSettingNeverLaunchesRenovate(t *testing.T) {
	for name, c := range map[string]struct {
		w    nudgewriteapi.WriteResult
		err  error
		want string
	}{
		"fallback": {w: nudgewriteapi.WriteResult{Outcome: nudgewriteapi.OutcomeFallback, Reason: "automergeSchedule is set"}, want: "automergeSchedule is set"},
		"failure":  {err: temporal.NewNonRetryableApplicationError("no SCM credentials for github.com", nudgewriteapi.ErrorTypeNoCredentials, nil), want: "no SCM credentials"},
	} {
		t.Run(name, func(t *testing.T) {
			env, rec, launched, _ := directEnv(t, "direct", c.w, c.err)
			env.ExecuteWorkflow(Workflow, request())
			require.True(t, env.IsWorkflowCompleted())
			var appErr *temporal.ApplicationError
			require.ErrorAs(t, env.GetWorkflowError(), &appErr)
			require.Equal(t, ReasonFailed, appErr.Type())
			require.Empty(t, *launched)
			require.Equal(t, []string{ReasonFailed}, rec.reasons)
			require.True(t, rec.outcomes[0].Warning)
			require.Contains(t, rec.outcomes[0].Message, c.want)
			require.Contains(t, rec.outcomes[0].Message, "immediateWriter direct")
			require.Equal(t, nudgeapi.PhaseFailed, state(t, env).Phase)
		})
	}
}

// The cluster chose Renovate because a ChangeGroup holds the edge: the direct
// writer is never asked, the Renovate run is launched and held at admission as
// before, and the state says why Renovate ran.
func TestEdgeHeldByAChangeGroupTakesTheRenovatePath(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	w := &fakeWriter{}
	env, _, rec, launched := setupOn(t, s.NewTestWorkflowEnvironment(), &nudgeapi.WriterChoice{Writer: nudgeapi.WriterRenovate, Setting: "auto", HeldBy: "bundle-update",
		Reason: "ChangeGroup bundle-update holds operand->bundle: the nudge takes the Renovate path"}, w.register)
	res := endFirstRun(t, env, renovaterun.RunStatus{HeldBy: "bundle-update", Reason: renovaterun.ReasonHeldByChangeGroup})
	require.Equal(t, nudgeapi.PhaseHeldByChangeGroup, res.Phase)
	require.Empty(t, w.asked, "the direct writer never writes a held edge")
	require.Len(t, *launched, 1)
	require.Equal(t, []string{reasonHeld}, rec.reasons)
	require.Equal(t, nudgeapi.WriterRenovate, res.Writer)
	require.Contains(t, res.WriterReason, "ChangeGroup bundle-update")
	require.Equal(t, "bundle-update", state(t, env).Choice.HeldBy)
}

// A validated nudge launches Renovate without asking for a writer: the direct
// writer serves immediate edges.
func TestValidatedNudgeAsksForNoWriter(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	w := &fakeWriter{}
	env, _, rec, launched := setupOn(t, s.NewTestWorkflowEnvironment(), &nudgeapi.WriterChoice{Writer: nudgeapi.WriterDirect, Setting: "direct"}, w.register)
	req := request()
	req.Mode = "validated"
	req.PollInterval = 24 * time.Hour
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(nudgeapi.SignalRunFinished, renovaterun.RunStatus{Name: renovateapi.RunName(testID, 1), Done: true, Succeeded: true})
	}, time.Minute)
	env.ExecuteWorkflow(Workflow, req)
	res := resultOf(t, env)
	require.Equal(t, nudgeapi.PhaseSucceeded, res.Phase)
	require.Empty(t, w.asked)
	require.Len(t, *launched, 1)
	require.Equal(t, []string{ReasonSucceeded}, rec.reasons)
	require.Empty(t, res.Writer, "no writer was chosen")
}

// The writer cannot be chosen (the API server is down past the retries): the
// nudge launches Renovate, as before the direct writer.
func TestWriterChoiceFailureLaunchesRenovate(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env, _, rec, launched := setupOn(t, s.NewTestWorkflowEnvironment(), nil, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterActivityWithOptions(func(context.Context, nudgeapi.WriterChoiceRequest) (nudgeapi.WriterChoice, error) {
			return nudgeapi.WriterChoice{}, errors.New("the API server is down")
		}, activity.RegisterOptions{Name: nudgeapi.ChooseWriterActivity})
	})
	res := endFirstRun(t, env, renovaterun.RunStatus{Succeeded: true})
	require.Equal(t, nudgeapi.PhaseSucceeded, res.Phase)
	require.Len(t, *launched, 1)
	require.Equal(t, []string{ReasonSucceeded}, rec.reasons)
	require.Equal(t, nudgeapi.WriterRenovate, res.Writer)
	require.Contains(t, res.WriterReason, "the API server is down")
}

// An outcome this Nudge does not know (a newer writer's): nothing says the build
// was delivered, so Renovate nudges it, after a Warning naming the outcome.
func TestUnknownWriterOutcomeLaunchesRenovate(t *testing.T) {
	env, rec, launched, _ := directEnv(t, "auto", nudgewriteapi.WriteResult{Outcome: "Queued"}, nil)
	req := request()
	req.PollInterval = 24 * time.Hour
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(nudgeapi.SignalRunFinished, renovaterun.RunStatus{Name: renovateapi.RunName(testID, 1), Done: true, Succeeded: true})
	}, time.Minute)
	env.ExecuteWorkflow(Workflow, req)
	res := resultOf(t, env)
	require.Equal(t, nudgeapi.PhaseSucceeded, res.Phase)
	require.Len(t, *launched, 1)
	require.Equal(t, []string{reasonWriterFallback, ReasonSucceeded}, rec.reasons)
	require.True(t, rec.outcomes[0].Warning)
	require.Contains(t, rec.outcomes[0].Message, `"Queued"`)
}
