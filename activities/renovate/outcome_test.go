package renovate

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"
)

// runStep runs the step's script as Tekton would (bash -c, the result path
// substituted), with a stand-in renovate on PATH that prints console, writes
// records as its JSON log to $LOG_FILE (one JSON object a line, as Renovate's
// bunyan file stream does) and exits rc.
func runStep(t *testing.T, console string, records []string, rc int) (outcome string, exit int, log string) {
	t.Helper()
	dir := t.TempDir()
	jsonLog := filepath.Join(dir, "records")
	require.NoError(t, os.WriteFile(jsonLog, []byte(strings.Join(records, "\n")+"\n"), 0o644))
	// Renovate lower-cases LOG_FILE before it writes there (lib/logger/utils.ts getEnv).
	fake := "#!/bin/sh\ncat <<'EOF'\n" + console + "\nEOF\nlc=$(printf %s \"$LOG_FILE\" | tr '[:upper:]' '[:lower:]')\n" +
		"[ -n \"$LOG_FILE\" ] && [ \"$LOG_FILE_LEVEL\" = debug ] && mkdir -p \"$(dirname \"$lc\")\" && cp " + jsonLog + " \"$lc\"\nexit " + string(rune('0'+rc)) + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "renovate"), []byte(fake), 0o755))
	result := filepath.Join(dir, "result")
	plr := (&Activities{}).pipelineRun(unitRequest("run"), false, false)
	script := plr.Spec.PipelineSpec.Tasks[0].TaskSpec.Steps[0].Command[2]
	script = strings.ReplaceAll(script, "$(results."+renovaterun.ResultOutcome+".path)", result)
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

// rec is one record of Renovate's JSON log: bunyan's fields, msg and fields.
func rec(level int, msg string, fields ...any) string {
	r := map[string]any{"name": "renovate", "hostname": "step", "pid": 7, "level": level, "logContext": "abc",
		"repository": "org/bundle", "msg": msg, "time": "2026-11-28T06:00:00.000Z", "v": 0}
	for i := 0; i+1 < len(fields); i += 2 {
		r[fields[i].(string)] = fields[i+1]
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// bunyan's levels.
const (
	debug = 20
	info  = 30
	warn  = 40
)

// The step keeps Renovate's exit code and its console log, and says in its
// result whether Renovate could not look up the image (it reports that at DEBUG
// or WARN with exit code 0), reading Renovate's JSON log.
func TestStepReportsRegistryAuthFailure(t *testing.T) {
	outcome, rc, log := runStep(t, " WARN: Error obtaining docker token (repository=org/bundle)\n INFO: Repository finished",
		[]string{rec(warn, "Error obtaining docker token"), rec(debug, "Failed to look up docker package quay.io/org/operand"), rec(info, "Repository finished")}, 0)
	require.Equal(t, renovaterun.OutcomeRegistryAuthFailed, outcome)
	require.Equal(t, 0, rc)
	require.Contains(t, log, "Error obtaining docker token", "Renovate's console log still goes to the step's log")
	require.Contains(t, log, "opened no pull request")
	require.Contains(t, log, "nudgeflow: Renovate logged: Error obtaining docker token", "the deciding record is named")

	// What Renovate 39 logs for a registry that wants credentials the run lacks
	// (a Basic challenge, or a Bearer token service answering 401).
	outcome, rc, log = runStep(t, "", []string{rec(debug, "Failed to get authHeaders for getTags lookup"),
		rec(debug, "Failed to look up docker package registry.example.com/org/operand"), rec(info, "Repository finished")}, 0)
	require.Equal(t, renovaterun.OutcomeRegistryAuthFailed, outcome)
	require.Equal(t, 0, rc)
	require.Contains(t, log, "could not authenticate to the image registry")

	// Any other failed lookup (a tag that is not there).
	outcome, rc, log = runStep(t, "", []string{rec(debug, "Docker Manifest is unknown"),
		rec(debug, "Failed to look up docker package registry.example.com/org/operand"), rec(info, "Repository finished")}, 0)
	require.Equal(t, renovaterun.OutcomeImageLookupFailed, outcome)
	require.Equal(t, 0, rc)
	require.Contains(t, log, "could not look up the nudging image")

	// The registry lists the repository's tags, but the build's tag is not there yet
	// (what the pinned Renovate logs: test/nudges TestAFailedRenovateRunIsRetriedAndLands).
	outcome, rc, _ = runStep(t, "", []string{rec(debug, "Could not determine new digest for update."), rec(info, "Repository finished")}, 0)
	require.Equal(t, renovaterun.OutcomeImageLookupFailed, outcome)
	require.Equal(t, 0, rc)

	outcome, rc, _ = runStep(t, "", []string{rec(info, "PR created", "pr", 42)}, 0)
	require.Equal(t, renovaterun.OutcomeOK, outcome)
	require.Equal(t, 0, rc)

	outcome, rc, _ = runStep(t, " FATAL: Unknown error", []string{rec(60, "Unknown error")}, 1)
	require.Equal(t, renovaterun.OutcomeOK, outcome, "a failed exit speaks for itself")
	require.Equal(t, 1, rc, "Renovate's exit code is the step's")
}

// Renovate logs "Unauthorized docker lookup" for its best-effort label lookup of
// another tag (lib/modules/datasource/docker/index.ts) too, and goes on to update
// the repository: without a failed lookup of the image, that is no failure.
func TestStepIgnoresAnUnauthorizedLabelLookup(t *testing.T) {
	outcome, _, log := runStep(t, "DEBUG: Unauthorized docker lookup", []string{
		rec(debug, "getLabels(https://quay.io, org/operand, latest)"),
		rec(debug, "Unauthorized docker lookup", "registryHost", "https://quay.io", "dockerRepository", "org/operand", "err", map[string]any{"statusCode": 401}),
		rec(info, "PR created", "pr", 42), rec(info, "Repository finished")}, 0)
	require.Equal(t, renovaterun.OutcomeOK, outcome)
	require.NotContains(t, log, "nudgeflow:")
}

// The step compares each record's msg, not the text of the log: the nudged
// repository's latest commit message is logged at DEBUG (lib/util/git), and a
// commit titled after a failure line is not a failure.
func TestStepReadsMessagesNotValues(t *testing.T) {
	outcome, _, _ := runStep(t, `DEBUG: latest repository commit {"message": "fix: Error updating branch"}`, []string{
		rec(debug, "latest repository commit", "latestCommit", map[string]any{"message": "fix: Error updating branch", "body": "Failed to look up docker package x"}),
		rec(info, "PR created", "pr", 42)}, 0)
	require.Equal(t, renovaterun.OutcomeOK, outcome)

	// A line that is not JSON (a stray write to the file) is skipped.
	outcome, _, _ = runStep(t, "", []string{"Error updating branch", rec(info, "Repository finished")}, 0)
	require.Equal(t, renovaterun.OutcomeOK, outcome)
}

// "Platform-native commit: unable to prepare for commit" follows "No file
// changes detected" when the branch already holds the change: nothing failed.
func TestStepExcusesAnUnchangedBranch(t *testing.T) {
	outcome, _, _ := runStep(t, "", []string{rec(debug, "No file changes detected. Skipping commit", "branchName", "konflux/component-updates/x"),
		rec(debug, "Platform-native commit: unable to prepare for commit", "branchName", "konflux/component-updates/x"), rec(info, "Repository finished")}, 0)
	require.Equal(t, renovaterun.OutcomeOK, outcome)
	outcome, _, _ = runStep(t, "", []string{rec(debug, "Platform-native commit: unable to prepare for commit"), rec(info, "Repository finished")}, 0)
	require.Equal(t, renovaterun.OutcomeRepositoryNotUpdated, outcome, "without it, the commit failed")
}

// Renovate 39 pushes the branch, fails to open the pull request, logs it and
// exits 0 (lib/workers/repository/update/pr/index.ts): pr-not-opened.
func TestStepReportsAPullRequestNotOpened(t *testing.T) {
	for _, records := range [][]string{
		{rec(debug, "Pull request creation error", "err", map[string]any{"statusCode": 422}), rec(warn, "A pull requests already exists")},
		{rec(debug, "Pull request creation error", "err", map[string]any{"statusCode": 502}), rec(warn, "Deleting branch due to server error", "branch", "b")},
		{rec(warn, "Failed to ensure PR", "prTitle", "Update operand")},
	} {
		outcome, rc, log := runStep(t, "", append(records, rec(info, "Repository finished")), 0)
		require.Equal(t, renovaterun.OutcomePRNotOpened, outcome, records)
		require.Equal(t, 0, rc)
		require.Contains(t, log, "opened no pull request")
	}
}

// Renovate exits 0 when it gives up on the repository or cannot write the branch:
// the step reads that as repository-not-updated and names Renovate's record above
// its own line, so the log says why.
func TestStepReportsARepositoryRenovateDidNotUpdate(t *testing.T) {
	// Renovate aborts the repository at INFO or WARN and exits 0.
	outcome, rc, log := runStep(t, "", []string{rec(info, "Repository has changed during renovation - aborting"), rec(info, "Repository finished")}, 0)
	require.Equal(t, renovaterun.OutcomeRepositoryNotUpdated, outcome)
	require.Equal(t, 0, rc)
	require.Contains(t, log, "did not update the repository")
	// The GitHub platform's commit through the API failed: no branch, "no-work".
	outcome, _, log = runStep(t, "", []string{rec(debug, "Platform-native commit: unknown error", "branchName", "konflux/component-updates/operand"),
		rec(info, "Repository finished")}, 0)
	require.Equal(t, renovaterun.OutcomeRepositoryNotUpdated, outcome)
	require.Contains(t, log, "Renovate logged: Platform-native commit: unknown error", "the matched record is named above nudgeflow's line")
	outcome, _, _ = runStep(t, "", []string{rec(warn, "Error updating branch: update failure")}, 0)
	require.Equal(t, renovaterun.OutcomeRepositoryNotUpdated, outcome)
	outcome, _, _ = runStep(t, "", []string{rec(info, "Repository has no package files - skipping")}, 0)
	require.Equal(t, renovaterun.OutcomeOK, outcome, "a repository that does not reference the image has nothing to nudge")
}

// A run that succeeded with a failed outcome (registry-auth-failed, image-lookup-failed,
// repository-not-updated) is a failed run, whose message says what to fix; older runs
// (no result) read as before.
func TestStatusOfARunWithAFailedOutcome(t *testing.T) {
	plr := (&Activities{}).pipelineRun(unitRequest("run"), false, false)
	plr.Namespace = "tenant"
	plr.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: "Succeeded"})
	require.True(t, renovaterun.StatusOf(plr).Succeeded, "no result: as before")
	for outcome, want := range map[string]struct{ reason, says string }{
		renovaterun.OutcomeRegistryAuthFailed:   {renovaterun.ReasonRegistryAuthFailed, "ServiceAccount build-pipeline-operand in namespace tenant"},
		renovaterun.OutcomeImageLookupFailed:    {renovaterun.ReasonImageLookupFailed, "the tag is missing"},
		renovaterun.OutcomeRepositoryNotUpdated: {renovaterun.ReasonRepositoryNotUpdated, "did not update the repository of " + plr.Annotations[AnnotationNudgedComponents]},
		renovaterun.OutcomePRNotOpened:          {renovaterun.ReasonPRNotOpened, "opened no pull request"},
	} {
		plr.Status.Results = []tektonv1.PipelineRunResult{{Name: renovaterun.ResultOutcome, Value: *tektonv1.NewStructuredValues(outcome)}}
		st := renovaterun.StatusOf(plr)
		require.True(t, st.Done, outcome)
		require.False(t, st.Succeeded, outcome)
		require.False(t, st.Cancelled, outcome)
		require.Equal(t, want.reason, st.Reason)
		require.Contains(t, st.Message, "quay.io/org/operand:rev1", outcome)
		require.Contains(t, st.Message, want.says, outcome)
	}
	plr.Status.Results[0].Value = *tektonv1.NewStructuredValues(renovaterun.OutcomeOK)
	require.True(t, renovaterun.StatusOf(plr).Succeeded)
}
