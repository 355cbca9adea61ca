package changegroup_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// chaosReplicas are the chaos world's replicas, as OS processes a seed SIGKILLs at
// random points and restarts:
//   - two `nudgeflow worker` processes on the package's task queue (the in-process
//     worker is stopped meanwhile). An activity a killed process had started is
//     retried by Temporal once its StartToClose timeout passes (killedActivityDelay);
//     the other replica takes every other task meanwhile.
//   - two `nudgeflow bridge` processes with leader election on (a Lease in a
//     namespace of their own): the leader reconciles, the other waits for the
//     Lease. The package's in-process bridge keeps running beside them: the API
//     server's admission webhooks and the forge webhook receiver are its (one
//     webhook address, as the world configured it), and its reconcilers run too,
//     as a second active bridge would during a rollout: the bridge is stateless and
//     idempotent (DESIGN.md rule 2), which the kills mid-reconcile exercise.
type chaosReplicas struct {
	mu    sync.Mutex
	procs map[string][]*workerProcess
	// since is where each process's log stood when it last started.
	since map[*workerProcess]int64
	kills int
}

func startChaosReplicas(t *testing.T) *chaosReplicas {
	w := world.Get(t)
	shared.worker.Stop()
	bin := buildBinary(t)
	r := &chaosReplicas{procs: map[string][]*workerProcess{}, since: map[*workerProcess]int64{}}
	env := append(os.Environ(), "TEMPORAL_ADDRESS="+w.Temporal.Address, "TEMPORAL_NAMESPACE="+w.Temporal.Namespace)
	leases := w.Namespace(t)
	_, _, certDir := w.WebhookServer()
	for i := range 2 {
		r.add(t, w, "worker", i, &workerProcess{t: t, bin: bin, env: env,
			args: []string{"worker", "--kubeconfig", w.Kubeconfig(t), "--task-queue", taskQueue, "--bot-name", bot.Name, "--bot-email", bot.Email}})
		r.add(t, w, "bridge", i, &workerProcess{t: t, bin: bin, env: env,
			args: []string{"bridge", "--kubeconfig", w.Kubeconfig(t), "--task-queue", taskQueue,
				"--leader-elect", "--leader-election-namespace", leases,
				"--webhook-port", fmt.Sprint(freePort(t)), "--webhook-cert-dir", certDir, "--health-probe-bind-address", "0",
				"--changegroup-debounce", settings.Debounce.String(), "--changegroup-poll-interval", settings.PollInterval.String()}})
	}
	t.Cleanup(func() {
		for _, ps := range r.procs {
			for _, p := range ps {
				p.t = t
				p.kill()
				_ = p.logs.Close()
			}
		}
		shared.worker = startWorker(w)
		require.NoError(t, shared.worker.Start())
	})
	return r
}

func (r *chaosReplicas) add(t *testing.T, w *world.World, kind string, i int, p *workerProcess) {
	logs, err := os.Create(filepath.Join(w.LogDir, fmt.Sprintf("chaos-%s-%d.log", kind, i)))
	require.NoError(t, err)
	p.logs = logs
	r.start(p)
	r.procs[kind] = append(r.procs[kind], p)
}

func (r *chaosReplicas) start(p *workerProcess) {
	if st, err := p.logs.Stat(); err == nil {
		r.since[p] = st.Size()
	}
	p.start()
}

// leader is the bridge replica that holds the Lease: the one whose log says it
// acquired it since it last started (-1 when none does yet).
func (r *chaosReplicas) leader() int {
	for i, p := range r.procs["bridge"] {
		b, err := os.ReadFile(p.logs.Name())
		if err == nil && int64(len(b)) > r.since[p] && strings.Contains(string(b[r.since[p]:]), "successfully acquired lease") {
			return i
		}
	}
	return -1
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// killOne SIGKILLs a replica of kind ("worker" or "bridge"), in whatever it is
// doing, and starts it again: a worker the seed picks; the bridge that leads (a
// standby's death changes nothing), else one the seed picks. The other bridge
// takes the Lease once it expires (--leader-elect-lease-duration).
func (r *chaosReplicas) killOne(t *testing.T, rng *rand.Rand, kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := rng.IntN(len(r.procs[kind]))
	if l := r.leader(); kind == "bridge" && l >= 0 {
		i = l
	}
	p := r.procs[kind][i]
	p.t = t
	t.Logf("SIGKILL %s replica %d (pid %d)", kind, i, p.cmd.Process.Pid)
	p.kill()
	r.kills++
	r.start(p)
}

func (r *chaosReplicas) killed() int {
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
