package nudges

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// Two targets in one repository whose nudging component asks for one branch
// (build-nudge-simple-branch) never push it at once: build-service runs them one
// after the other in one PipelineRun; nudgeflow starts the second run when the
// first ended (the bridge releases it), and both nudges succeed.
func TestSimpleBranchTargetsTakeTurns(t *testing.T) {
	f, b, running, waiting := simpleBranchTargetsOfOneBuild(t)
	require.Equal(t, "github.com/"+f.ns+"/bundles@main:konflux/component-updates/component-update-operand", running.Annotations[renovaterun.AnnotationBranch])
	require.Equal(t, running.Annotations[renovaterun.AnnotationBranch], waiting.Annotations[renovaterun.AnnotationBranch])
	require.Equal(t, running.Name, waiting.Annotations[renovaterun.AnnotationQueuedForBranch])

	f.finish(running, true)
	world.Eventually(t, waitFor, "the waiting run starts once the first ended", func() (bool, error) {
		got := f.get(&waiting)
		waiting = *got
		return got.Spec.Status == "" && !renovaterun.Queued(got), nil
	})
	f.finish(waiting, true)
	for _, target := range []string{"bundle-a", "bundle-b"} {
		res := f.nudgeResult(nudgeapi.WorkflowID(f.ns, string(b.UID), target))
		require.Equal(t, nudgeapi.PhaseSucceeded, res.Phase, res.Reason)
	}
	require.Len(t, f.renovateRuns(), 2)
}

// simpleBranchTargetsOfOneBuild makes two targets in one repository of a nudging
// component with one branch (build-nudge-simple-branch), and its first build; it
// waits for one run on the branch and the other queued behind it.
func simpleBranchTargetsOfOneBuild(t *testing.T) (f *fixture, b *tektonv1.PipelineRun, running, waiting tektonv1.PipelineRun) {
	t.Helper()
	f = newFixture(t)
	f.component("operand", "", map[string]string{renovate.AnnotationSimpleBranch: "true"})
	f.component("bundle-a", f.repoURL("github.com", "bundles"), nil)
	f.component("bundle-b", f.repoURL("github.com", "bundles"), nil)
	f.credentials("github.com")
	f.nudgeConfig(immediate("operand", "bundle-a"), immediate("operand", "bundle-b"))
	b = f.build("operand", 1, nil)
	world.Eventually(t, waitFor, "two runs, one started and one waiting for the branch", func() (bool, error) {
		runs := f.renovateRuns()
		if len(runs) != 2 {
			return false, fmt.Errorf("%d runs", len(runs))
		}
		started, queued := 0, 0
		for _, r := range runs {
			switch {
			case renovaterun.Queued(&r):
				queued++
				waiting = r
			case r.Spec.Status == "":
				started++
				running = r
			}
		}
		if started != 1 || queued != 1 {
			return false, fmt.Errorf("%d started, %d queued", started, queued)
		}
		return true, nil
	})
	return f, b, running, waiting
}
