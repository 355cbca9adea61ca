package renovate

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"

	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// stepRun runs the step's script as Tekton would (bash -c), with "renovate"
// standing in for Renovate, against a git repository on disk whose branch
// konflux/nudge has a head commit with message head ("" for no such branch). It
// returns the outcome result and the step's output.
func stepRun(t *testing.T, builtAt time.Time, head string) (outcome, output string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the step needs git: %v", err)
	}
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	require.NoError(t, os.MkdirAll(repo, 0o755))
	git("init", "-q", "-b", "main")
	git("commit", "-q", "--allow-empty", "-m", "base")
	if head != "" {
		git("checkout", "-q", "-b", "konflux/nudge")
		git("commit", "-q", "--allow-empty", "-m", head)
	}
	result := filepath.Join(dir, "outcome")
	script := strings.ReplaceAll(withOutcomeCheck("echo renovate-ran"), "$(results."+renovaterun.ResultOutcome+".path)", result)
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "TMPDIR="+dir, secretEnvPrefix+tokenKey+"=s3cret-token")
	check := BranchCheck{GitURL: repo, Platform: "github", Branch: "konflux/nudge"}
	plr := (&Activities{}).pipelineRun(renovateapi.LaunchRequest{Name: "run-older", Namespace: "tenant", Build: imagebuild.Build{BuiltAt: builtAt}}, false, false)
	withBranchCheck(plr, builtAt, check)
	for _, e := range plr.Spec.PipelineSpec.Tasks[0].TaskSpec.Steps[0].Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	got, err := os.ReadFile(result)
	require.NoError(t, err)
	require.NotContains(t, string(out), "s3cret-token")
	return string(got), string(out)
}

func commitOf(builtAt time.Time, run string) string {
	return "Update operand to 1234567\n\nImage created from 'x'\n\nSigned-off-by: bot <bot@example.com>" +
		commitTrailers(ConfigInput{BuiltAt: builtAt, Run: run})
}

// The step refuses to run Renovate when the nudge branch's head carries a newer
// build, and runs it in every other case (fail open).
func TestStepRefusesToWriteOverANewerBuild(t *testing.T) {
	mine := time.Date(2026, 11, 1, 10, 1, 0, 500, time.UTC)
	for _, c := range []struct {
		name, head, outcome string
	}{
		{"a newer build heads the branch", commitOf(mine.Add(time.Nanosecond), "run-newer"), "superseded:run-newer"},
		{"the newer commit names a run that is no name", commitOf(mine.Add(time.Hour), "Run Newer; rm -rf /"), "superseded:"},
		{"an older build heads the branch", commitOf(mine.Add(-time.Hour), "run-older-still"), renovaterun.OutcomeOK},
		{"this build heads the branch (a retry)", commitOf(mine, "run-older"), renovaterun.OutcomeOK},
		{"no branch yet", "", renovaterun.OutcomeOK},
		{"a person's commit heads the branch", "fix: pin it by hand", renovaterun.OutcomeOK},
		{"a malformed trailer", "x\n\n" + TrailerBuiltAt + ": 2999-01-01", renovaterun.OutcomeOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			outcome, out := stepRun(t, mine, c.head)
			require.Equal(t, c.outcome, outcome, out)
			if strings.HasPrefix(c.outcome, renovaterun.OutcomeSuperseded) {
				require.NotContains(t, out, "renovate-ran")
				require.Contains(t, out, "nudgeflow: branch konflux/nudge holds commit")
			} else {
				require.Contains(t, out, "renovate-ran")
			}
		})
	}
	// A run whose build's start is unknown looks at nothing.
	outcome, out := stepRun(t, time.Time{}, commitOf(mine, "run-newer"))
	require.Equal(t, renovaterun.OutcomeOK, outcome)
	require.Contains(t, out, "renovate-ran")
}

// StatusOf reads the step's refusal as superseded: the Nudge ends Superseded,
// is not retried, and no forge is asked (SupersededBy set, not Succeeded, not
// Cancelled).
func TestStatusOfReadsTheStepsRefusalAsSuperseded(t *testing.T) {
	for outcome, by := range map[string]string{"superseded:run-newer": "run-newer", "superseded:": renovaterun.SupersededUnnamed, "supersededx": ""} {
		plr := (&Activities{}).pipelineRun(renovateapi.LaunchRequest{Name: "run-older", Namespace: "tenant"}, false, false)
		plr.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: "Succeeded"})
		plr.Status.Results = []tektonv1.PipelineRunResult{{Name: renovaterun.ResultOutcome, Value: *tektonv1.NewStructuredValues(outcome)}}
		st := renovaterun.StatusOf(plr)
		require.True(t, st.Done, outcome)
		require.Equal(t, by, st.SupersededBy, outcome)
		require.Equal(t, by == "", st.Succeeded, outcome)
		require.False(t, st.Cancelled, outcome)
		if by != "" {
			require.Equal(t, renovaterun.ReasonSupersededOnBranch, st.Reason)
		}
	}
}
