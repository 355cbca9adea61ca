package changegroup_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// workerProcess is `nudgeflow worker` as a separate OS process, so it can be killed
// the hard way (SIGKILL) in the middle of its work.
type workerProcess struct {
	t    *testing.T
	bin  string
	args []string
	env  []string
	cmd  *exec.Cmd
	logs *os.File
}

func (p *workerProcess) start() {
	p.t.Helper()
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Env = p.env
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	require.NoError(p.t, p.cmd.Start())
}

func (p *workerProcess) kill() {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Kill())
	_ = p.cmd.Wait()
}

// killedActivityDelay bounds how long a kill may hold the group up: an activity the
// dead process had started is retried only once its StartToClose timeout (one
// minute for forge calls) has passed; the rest is slack for a loaded machine.
const killedActivityDelay = 3 * time.Minute

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nudgeflow")
	build := exec.Command("go", "build", "-o", bin, "./cmd/nudgeflow")
	build.Dir = localenv.RepoRoot()
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building nudgeflow: %s", out)
	return bin
}

// TestWorkerKilledMidScenario kills the worker process at several points of a
// ChangeGroup's life — after the draft PR, in the middle of a push, during the
// release — and restarts it. Temporal resumes the workflow where it was: no
// duplicate PR, no lost digest, still exactly one CI build.
func TestWorkerKilledMidScenario(t *testing.T) {
	w := world.Get(t)
	components := []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10"}
	s := newScenario(t, components...)

	// Hand the task queue to a worker process of our own.
	shared.worker.Stop()
	t.Cleanup(func() {
		shared.worker = startWorker(w)
		require.NoError(t, shared.worker.Start())
	})
	logs, err := os.Create(filepath.Join(w.LogDir, "killed-worker.log"))
	require.NoError(t, err)
	p := &workerProcess{t: t, bin: buildBinary(t), logs: logs,
		args: []string{"worker", "--kubeconfig", w.Kubeconfig(t), "--task-queue", taskQueue, "--bot-name", bot.Name, "--bot-email", bot.Email},
		env:  append(os.Environ(), "TEMPORAL_ADDRESS="+w.Temporal.Address, "TEMPORAL_NAMESPACE="+w.Temporal.Namespace),
	}
	p.start()
	s.createGroup("g", components, 0)
	s.explainOnFailure("g")

	// 1. Killed right after the draft PR appears.
	for _, c := range components[:3] {
		s.buildNow(c, 1)
	}
	s.draftPR()
	p.kill()

	// 2. Builds arrive while no worker runs: signals are durable.
	for _, c := range components[3:6] {
		s.buildNow(c, 1)
	}
	writes := shared.emu.Writes()
	p.start()
	world.Eventually(t, killedActivityDelay, "the restarted worker starts pushing", func() (bool, error) {
		return shared.emu.Writes() > writes, nil
	})
	p.kill() // in the middle of the push

	// 3. The rest, with a rebuild; killed as soon as the release begins.
	p.start()
	s.buildNow("c2", 2)
	for _, c := range components[6:] {
		s.buildNow(c, 1)
	}
	world.Eventually(t, killedActivityDelay, "the release begins", func() (bool, error) {
		prs := shared.emu.PRs(s.ns, "bundle")
		if len(prs) != 1 {
			return false, nil
		}
		if !prs[0].Draft {
			return true, nil
		}
		st, err := s.tryQuery(s.group("g"))
		return err == nil && st.Released, err
	})
	p.kill()
	p.start()
	defer p.kill()

	// An activity the killed process had started is retried once its StartToClose
	// timeout passes: that is how long a kill may delay the group, at most.
	cg := s.waitFor("g", "phase Ready", killedActivityDelay, func(cg *appstudiov1alpha1.ChangeGroup) bool {
		return cg.Status.Phase == appstudiov1alpha1.PhaseReady
	})
	require.Equal(t, "10/10", cg.Status.Ready)
	prs := shared.emu.PRs(s.ns, "bundle")
	require.Len(t, prs, 1, "no duplicate PR")
	want := map[string]string{}
	for _, c := range components {
		want[c] = digestOf(c, 1)
	}
	want["c2"] = digestOf("c2", 2)
	require.Equal(t, want, s.csvDigests(prs[0].Head), "no digest lost")
	require.False(t, prs[0].Draft)
	require.Equal(t, 1, shared.emu.CIBuilds(s.ns, "bundle"), "still exactly one CI build")

	require.NoError(t, shared.emu.MergePR(s.ns, "bundle", prs[0].Number))
	s.waitFor("g", "phase Completed", killedActivityDelay, func(cg *appstudiov1alpha1.ChangeGroup) bool {
		return cg.Status.Phase == appstudiov1alpha1.PhaseCompleted
	})
	s.record("g")
	fmt.Fprintf(logs, "scenario completed\n")
}
