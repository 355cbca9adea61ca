package nudge

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/metrics"
	"github.com/nudgeflow/nudgeflow/internal/metrics/metricstest"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// requireSucceeded: the nudge ended Succeeded.
func requireSucceeded(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
	t.Helper()
	require.NoError(t, env.GetWorkflowError())
	var res nudgeapi.Result
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, nudgeapi.PhaseSucceeded, res.Phase)
}

// exited0 is a run that ended with Renovate's exit code 0; reason is the step's
// reading of its log ("" when it named no failure).
func exited0(attempt int, reason string) renovaterun.RunStatus {
	s := renovaterun.RunStatus{Name: renovateapi.RunName(testID, attempt), Done: true, ExitedZero: true, Succeeded: reason == ""}
	if reason == "" {
		s.Reason = "Succeeded"
	} else {
		s.Reason, s.Message = reason, "the step's message"
	}
	return s
}

// Renovate exited 0 and its log named no failure, but the forge shows the digest
// nowhere (a pull request it failed to open, a branch it skipped): the run failed
// (NotDelivered) and is tried again; the second run's digest is in the pull
// request, which the Event names.
func TestARunTheForgeDoesNotShowIsRetried(t *testing.T) {
	m := metricstest.New()
	env, a, rec, launched := setupWithMetrics(t, m)
	var asked []renovateapi.DeliveryRequest
	env.OnActivity(a.CheckDelivery, mock.Anything, mock.Anything).Return(func(_ context.Context, r renovateapi.DeliveryRequest) (renovaterun.DeliveryVerdict, error) {
		asked = append(asked, r)
		if len(asked) == 1 {
			return renovaterun.DeliveryVerdict{Branch: "b", Base: "main", Message: "the forge shows sha256:1111 neither on the base branch main nor in an open or merged pull request of branch b"}, nil
		}
		return renovaterun.DeliveryVerdict{Delivered: true, Where: renovaterun.DeliveredInPullRequest, PR: 7, Message: "sha256:1111 is in open pull request #7"}, nil
	})
	req := request()
	req.PollInterval = 24 * time.Hour
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(nudgeapi.SignalRunFinished, exited0(1, "")) }, time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(nudgeapi.SignalRunFinished, exited0(2, "")) }, 8*time.Minute)
	env.ExecuteWorkflow(Workflow, req)

	requireSucceeded(t, env)
	require.Len(t, *launched, 2)
	require.Equal(t, []string{ReasonRunFailed, ReasonSucceeded}, rec.reasons)
	require.Contains(t, rec.outcomes[0].Message, renovaterun.ReasonNotDelivered)
	require.Contains(t, rec.outcomes[0].Message, "neither on the base branch main")
	require.Contains(t, rec.outcomes[1].Message, "pull request #7", "the Event says where the digest is")
	require.Len(t, asked, 2)
	require.Equal(t, renovateapi.DeliveryRequest{Namespace: "ns", Nudging: "operand", Nudged: "bundle", ImageURL: "quay.io/org/operand:abc",
		Digest: "sha256:1111", PipelineRun: renovateapi.RunName(testID, 1), LogSaysOK: true}, asked[0])
	require.EqualValues(t, 1, m.Total(metrics.RenovateRuns, "outcome", metrics.RunFailed, "reason", metrics.ReasonNotDelivered))
	require.EqualValues(t, 1, m.Total(metrics.RenovateRuns, "outcome", metrics.RunSucceeded, "reason", metrics.ReasonDelivered))
}

// The step read a failure in Renovate's log, but the forge shows the digest in
// the pull request: the run delivered (the forge decides, not the log).
func TestTheForgeOverridesAFailureInTheLog(t *testing.T) {
	env, a, rec, launched := setup(t)
	env.OnActivity(a.CheckDelivery, mock.Anything, mock.Anything).Return(
		renovaterun.DeliveryVerdict{Delivered: true, Where: renovaterun.DeliveredOnBase, Message: "sha256:1111 is on the base branch main"}, nil)
	req := request()
	req.PollInterval = 24 * time.Hour
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(nudgeapi.SignalRunFinished, exited0(1, renovaterun.ReasonRegistryAuthFailed))
	}, time.Minute)
	env.ExecuteWorkflow(Workflow, req)

	requireSucceeded(t, env)
	require.Len(t, *launched, 1)
	require.Equal(t, []string{ReasonSucceeded}, rec.reasons)
	require.Contains(t, rec.outcomes[0].Message, "on the base branch main")
}

// The step's reason stays when the forge agrees nothing landed (it says what to
// fix); a forge that cannot be asked fails the run as DeliveryUnknown; after the
// last attempt the nudge fails, never a quiet success. A run that exited non-zero
// is not asked about.
func TestNotDeliveredKeepsTheStepsReason(t *testing.T) {
	m := metricstest.New()
	env, a, rec, _ := setupWithMetrics(t, m)
	calls := 0
	env.OnActivity(a.CheckDelivery, mock.Anything, mock.Anything).Return(func(context.Context, renovateapi.DeliveryRequest) (renovaterun.DeliveryVerdict, error) {
		calls++
		if calls == 1 {
			return renovaterun.DeliveryVerdict{Message: "the forge shows it nowhere"}, nil
		}
		return renovaterun.DeliveryVerdict{}, temporal.NewNonRetryableApplicationError("the forge is down", "Down", errors.New("502"))
	})
	req := request()
	req.PollInterval = 24 * time.Hour
	req.MaxAttempts = 3
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(nudgeapi.SignalRunFinished, exited0(1, renovaterun.ReasonRegistryAuthFailed))
	}, time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(nudgeapi.SignalRunFinished, exited0(2, "")) }, 8*time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(nudgeapi.SignalRunFinished, renovaterun.RunStatus{Name: renovateapi.RunName(testID, 3), Done: true, Reason: "Failed", Message: "renovate exited 1"})
	}, 25*time.Minute)
	env.ExecuteWorkflow(Workflow, req)

	require.Error(t, env.GetWorkflowError())
	require.Equal(t, 2, calls, "the run that exited 1 is not asked about")
	require.Equal(t, []string{ReasonRunFailed, ReasonRunFailed, ReasonFailed}, rec.reasons)
	require.Contains(t, rec.outcomes[0].Message, renovaterun.ReasonRegistryAuthFailed)
	require.Contains(t, rec.outcomes[0].Message, "the forge shows it nowhere")
	require.Contains(t, rec.outcomes[1].Message, renovaterun.ReasonDeliveryUnknown)
	require.Contains(t, rec.outcomes[1].Message, "the forge is down")
	for reason, n := range map[string]int{metrics.ReasonRegistryAuth: 1, metrics.ReasonDeliveryUnknown: 1, metrics.ReasonRenovateFailed: 1} {
		require.EqualValues(t, n, m.Total(metrics.RenovateRuns, "outcome", metrics.RunFailed, "reason", reason), reason)
	}
}

// The reason label is bounded: every status maps into metrics.RunReasons, a reason
// nudgeflow does not know (Tekton's, free text) into renovate-failed.
func TestRunReasonIsBounded(t *testing.T) {
	for s, want := range map[*renovaterun.RunStatus]string{
		{Done: true, Succeeded: true}: metrics.ReasonDelivered,
		{Done: true, Gone: true}:      metrics.ReasonGone,
		{Done: true, HeldBy: "g", Reason: renovaterun.ReasonHeldByChangeGroup}: metrics.ReasonHeld,
		{Done: true, Cancelled: true, Reason: "Cancelled"}:                     metrics.ReasonCancelled,
		{Done: true, SupersededBy: "r", Reason: "Cancelled"}:                   metrics.ReasonSuperseded,
		{Done: true, Reason: renovaterun.ReasonPRNotOpened}:                    metrics.ReasonPRNotOpened,
		{Done: true, Reason: renovaterun.ReasonNotDelivered}:                   metrics.ReasonNotDelivered,
		{Done: true, Reason: "PipelineRunTimeout"}:                             metrics.ReasonTimeout,
		{Done: true, Reason: "Failed"}:                                         metrics.ReasonRenovateFailed,
		{Done: true, Reason: "anything a webhook writes"}:                      metrics.ReasonRenovateFailed,
	} {
		got := runReason(*s)
		require.Equal(t, want, got, "%+v", *s)
		require.Contains(t, metrics.RunReasons, got)
	}
}
