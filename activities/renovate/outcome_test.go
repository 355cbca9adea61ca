package renovate

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"
)

// runStep runs the step's script as Tekton would (bash -c, the result path
// substituted), with a stand-in renovate on PATH that prints output and exits rc.
func runStep(t *testing.T, output string, rc int) (outcome string, exit int, log string) {
	t.Helper()
	dir := t.TempDir()
	fake := "#!/bin/sh\ncat <<'EOF'\n" + output + "\nEOF\nexit " + string(rune('0'+rc)) + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "renovate"), []byte(fake), 0o755))
	result := filepath.Join(dir, "result")
	plr := (&Activities{}).pipelineRun(unitRequest("run"), false, false)
	script := plr.Spec.PipelineSpec.Tasks[0].TaskSpec.Steps[0].Command[2]
	script = strings.ReplaceAll(script, "$(results."+ResultOutcome+".path)", result)
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "TOKEN_token_0=secret")
	out, err := cmd.CombinedOutput()
	exit = 0
	if ee, ok := err.(*exec.ExitError); ok {
		exit = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	raw, err := os.ReadFile(result)
	require.NoError(t, err)
	return string(raw), exit, string(out)
}

// The step keeps Renovate's exit code and its log, and says in its result whether
// Renovate could not authenticate to the registry (which it reports as a WARN
// with exit code 0).
func TestStepReportsRegistryAuthFailure(t *testing.T) {
	outcome, rc, log := runStep(t, " WARN: Error obtaining docker token (repository=org/bundle)\n INFO: Repository finished", 0)
	require.Equal(t, OutcomeRegistryAuthFailed, outcome)
	require.Equal(t, 0, rc)
	require.Contains(t, log, "Error obtaining docker token", "Renovate's log still goes to the step's log")
	require.Contains(t, log, "opened no pull request")

	// What Renovate 39 logs for a registry that wants credentials the run lacks
	// (a Basic challenge, or a Bearer token service answering 401).
	outcome, rc, log = runStep(t, "DEBUG: Failed to get authHeaders for getTags lookup (repository=org/bundle)\n"+
		"DEBUG: Failed to look up docker package registry.example.com/org/operand (repository=org/bundle)\n INFO: Repository finished", 0)
	require.Equal(t, OutcomeRegistryAuthFailed, outcome)
	require.Equal(t, 0, rc)
	require.Contains(t, log, "could not authenticate to the image registry")

	// Any other failed lookup (a tag that is not there).
	outcome, rc, log = runStep(t, "DEBUG: Docker Manifest is unknown\n"+
		"DEBUG: Failed to look up docker package registry.example.com/org/operand (repository=org/bundle)\n INFO: Repository finished", 0)
	require.Equal(t, OutcomeImageLookupFailed, outcome)
	require.Equal(t, 0, rc)
	require.Contains(t, log, "could not look up the nudging image")

	// The registry lists the repository's tags, but the build's tag is not there yet
	// (what the pinned Renovate logs: test/nudges TestAFailedRenovateRunIsRetriedAndLands).
	outcome, rc, _ = runStep(t, "DEBUG: Could not determine new digest for update. (repository=org/bundle)\n INFO: Repository finished", 0)
	require.Equal(t, OutcomeImageLookupFailed, outcome)
	require.Equal(t, 0, rc)

	outcome, rc, _ = runStep(t, ` INFO: PR created (pr=42)`, 0)
	require.Equal(t, OutcomeOK, outcome)
	require.Equal(t, 0, rc)

	outcome, rc, _ = runStep(t, " FATAL: Unknown error", 1)
	require.Equal(t, OutcomeOK, outcome, "a failed exit speaks for itself")
	require.Equal(t, 1, rc, "Renovate's exit code is the step's")
}

// Renovate exits 0 when it gives up on the repository or cannot write the branch:
// the step reads that as repository-not-updated and repeats Renovate's line above
// its own, so the log says why.
func TestStepReportsARepositoryRenovateDidNotUpdate(t *testing.T) {
	// Renovate aborts the repository at INFO or WARN and exits 0.
	outcome, rc, log := runStep(t, " INFO: Repository has changed during renovation - aborting (repository=org/bundle)\n INFO: Repository finished", 0)
	require.Equal(t, OutcomeRepositoryNotUpdated, outcome)
	require.Equal(t, 0, rc)
	require.Contains(t, log, "did not update the repository")
	// The GitHub platform's commit through the API failed: no branch, "no-work".
	outcome, _, log = runStep(t, "DEBUG: Platform-native commit: unknown error (repository=org/bundle, branch=konflux/component-updates/operand)\n INFO: Repository finished", 0)
	require.Equal(t, OutcomeRepositoryNotUpdated, outcome)
	require.Contains(t, log, "Platform-native commit: unknown error", "the matched line is repeated above nudgeflow's")
	outcome, _, _ = runStep(t, " WARN: Error updating branch: update failure (repository=org/bundle)", 0)
	require.Equal(t, OutcomeRepositoryNotUpdated, outcome)
	outcome, _, _ = runStep(t, " INFO: Repository has no package files - skipping (repository=org/bundle)", 0)
	require.Equal(t, OutcomeOK, outcome, "a repository that does not reference the image has nothing to nudge")

}

// A run that succeeded with a failed outcome (registry-auth-failed, image-lookup-failed,
// repository-not-updated) is a failed run, whose message says what to fix; older runs
// (no result) read as before.
func TestStatusOfARunWithAFailedOutcome(t *testing.T) {
	plr := (&Activities{}).pipelineRun(unitRequest("run"), false, false)
	plr.Namespace = "tenant"
	plr.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: "Succeeded"})
	require.True(t, StatusOf(plr).Succeeded, "no result: as before")
	for outcome, want := range map[string]struct{ reason, says string }{
		OutcomeRegistryAuthFailed:   {ReasonRegistryAuthFailed, "ServiceAccount build-pipeline-operand in namespace tenant"},
		OutcomeImageLookupFailed:    {ReasonImageLookupFailed, "the tag is missing"},
		OutcomeRepositoryNotUpdated: {ReasonRepositoryNotUpdated, "did not update the repository of " + plr.Annotations[AnnotationNudgedComponents]},
	} {
		plr.Status.Results = []tektonv1.PipelineRunResult{{Name: ResultOutcome, Value: *tektonv1.NewStructuredValues(outcome)}}
		st := StatusOf(plr)
		require.True(t, st.Done, outcome)
		require.False(t, st.Succeeded, outcome)
		require.False(t, st.Cancelled, outcome)
		require.Equal(t, want.reason, st.Reason)
		require.Contains(t, st.Message, "quay.io/org/operand:rev1", outcome)
		require.Contains(t, st.Message, want.says, outcome)
	}
	plr.Status.Results[0].Value = *tektonv1.NewStructuredValues(OutcomeOK)
	require.True(t, StatusOf(plr).Succeeded)
}
