package changegroup_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// workerReplicas are the chaos world's workers: two `nudgeflow worker` OS
// processes on the package's task queue (the in-process worker is stopped
// meanwhile), one of which a seed SIGKILLs at random points and restarts. An
// activity the killed process had started is retried by Temporal once its
// StartToClose timeout passes (killedActivityDelay); the other replica takes every
// other task meanwhile.
type workerReplicas struct {
	mu    sync.Mutex
	procs []*workerProcess
	kills int
}

func startWorkerReplicas(t *testing.T) *workerReplicas {
	w := world.Get(t)
	shared.worker.Stop()
	bin := buildBinary(t)
	r := &workerReplicas{}
	for i := range 2 {
		logs, err := os.Create(filepath.Join(w.LogDir, fmt.Sprintf("chaos-worker-%d.log", i)))
		require.NoError(t, err)
		p := &workerProcess{t: t, bin: bin, logs: logs,
			args: []string{"worker", "--kubeconfig", w.Kubeconfig(t), "--task-queue", taskQueue, "--bot-name", bot.Name, "--bot-email", bot.Email},
			env:  append(os.Environ(), "TEMPORAL_ADDRESS="+w.Temporal.Address, "TEMPORAL_NAMESPACE="+w.Temporal.Namespace),
		}
		p.start()
		r.procs = append(r.procs, p)
	}
	t.Cleanup(func() {
		for _, p := range r.procs {
			p.t = t
			p.kill()
			_ = p.logs.Close()
		}
		shared.worker = startWorker(w)
		require.NoError(t, shared.worker.Start())
	})
	return r
}

// killOne SIGKILLs a replica the seed picks, in whatever it is doing, and starts
// it again.
func (r *workerReplicas) killOne(t *testing.T, rng *rand.Rand) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := rng.IntN(len(r.procs))
	p := r.procs[i]
	p.t = t
	t.Logf("SIGKILL worker replica %d (pid %d)", i, p.cmd.Process.Pid)
	p.kill()
	r.kills++
	p.start()
}

func (r *workerReplicas) killed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.kills
}

// pruneHeldBuild deletes b's build PipelineRun once group holds its nudge and has
// collected the build (as a PipelineRun pruner would, later); it reports whether
// both held when it did.
func pruneHeldBuild(t *testing.T, s *scenario, group string, b chaosBuild) bool {
	ctx := context.Background()
	held, _ := world.Poll(time.Minute, func() (bool, error) {
		var plr tektonv1.PipelineRun
		if err := s.w.Kube.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: b.nudgePLR}, &plr); err != nil || plr.Annotations[konflux.AnnotationHeldBy] == "" {
			return false, nil
		}
		for _, c := range s.group(group).Status.Components {
			if c.Name == b.component && c.NewBuild == b.digest {
				return true, nil
			}
		}
		return false, nil
	})
	var build tektonv1.PipelineRun
	require.NoError(t, s.w.Kube.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: b.build}, &build))
	require.NoError(t, s.w.Kube.Delete(ctx, &build))
	t.Logf("pruned build %s of %s (its nudge %s held and collected by %s: %v)", b.build, b.component, b.nudgePLR, group, held)
	return held
}
