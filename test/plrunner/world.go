package plrunner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"knative.dev/pkg/apis"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nudgeflow/nudgeflow/test/localenv"
)

// World is what a test of nudge PipelineRuns needs besides the runs: a
// kube-apiserver serving Tekton's PipelineRun (and test/crds' other kinds) and
// a Runner watching it. One World serves many tests: the runner runs every
// released run it sees, in parallel, each in its own work directory.
type World struct {
	Client ctrlclient.WithWatch
	Runner *Runner
	env    *envtest.Environment
	stop   func() error
}

// StartWorld starts the API server and a runner keeping its state in stateDir,
// with toolPath (the directory of the pinned `renovate`) first on the steps' PATH.
func StartWorld(stateDir, toolPath string) (*World, error) {
	assets, err := localenv.KubeAssets()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(localenv.RepoRoot(), "test", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start kube-apiserver for the runner: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), tektonv1.AddToScheme(scheme)); err != nil {
		return nil, errors.Join(fmt.Errorf("build the client scheme: %w", err), env.Stop())
	}
	c, err := ctrlclient.NewWithWatch(cfg, ctrlclient.Options{Scheme: scheme})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("client for the runner's API server: %w", err), env.Stop())
	}
	w := &World{Client: c, Runner: &Runner{Client: c, StateDir: stateDir, ToolPath: toolPath}, env: env}
	w.stop = w.Runner.Start(context.Background())
	return w, nil
}

// Config is the API server's, for a client with another scheme (nudgeflow's
// kinds: Components, ReleasePlanAdmissions, Pipelines as Code Repositories).
func (w *World) Config() *rest.Config { return w.env.Config }

// Stop stops the runner (killing the steps still running) and the API server.
func (w *World) Stop() error {
	return errors.Join(w.stop(), w.env.Stop())
}

// LogPath is where the runner keeps the log of run ns/name (all its steps).
func (r *Runner) LogPath(ns, name string) string {
	return filepath.Join(r.StateDir, "runs", ns, name+".log")
}

// Release clears spec.status of a pending run, as nudgeflow releases the run it
// created held; Cancel sets it to Cancelled, as `tkn pipelinerun cancel` does.
func Release(ctx context.Context, c ctrlclient.Client, ns, name string) error {
	return patchSpecStatus(ctx, c, ns, name, "")
}

// Cancel asks Tekton (here: the runner) to stop run ns/name.
func Cancel(ctx context.Context, c ctrlclient.Client, ns, name string) error {
	return patchSpecStatus(ctx, c, ns, name, tektonv1.PipelineRunSpecStatusCancelled)
}

func patchSpecStatus(ctx context.Context, c ctrlclient.Client, ns, name string, s tektonv1.PipelineRunSpecStatus) error {
	var plr tektonv1.PipelineRun
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &plr); err != nil {
		return fmt.Errorf("read PipelineRun %s/%s: %w", ns, name, err)
	}
	patch := ctrlclient.MergeFrom(plr.DeepCopy())
	plr.Spec.Status = s
	if err := c.Patch(ctx, &plr, patch); err != nil {
		return fmt.Errorf("set spec.status of PipelineRun %s/%s to %q: %w", ns, name, s, err)
	}
	return nil
}

// WaitFor polls run ns/name until done says so or timeout passes; it returns
// the run as last read.
func WaitFor(ctx context.Context, c ctrlclient.Client, ns, name string, timeout time.Duration, done func(*tektonv1.PipelineRun) bool) (*tektonv1.PipelineRun, error) {
	var plr tektonv1.PipelineRun
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &plr); err != nil {
			return false, fmt.Errorf("read PipelineRun %s/%s: %w", ns, name, err)
		}
		return done(&plr), nil
	})
	if err != nil {
		return &plr, fmt.Errorf("wait for PipelineRun %s/%s: %w", ns, name, err)
	}
	return &plr, nil
}

// Ended: the run's Succeeded condition is True or False.
func Ended(plr *tektonv1.PipelineRun) bool {
	c := plr.Status.GetCondition(apis.ConditionSucceeded)
	return c != nil && c.Status != corev1.ConditionUnknown
}

// Running: the run's step has started and not ended.
func Running(plr *tektonv1.PipelineRun) bool {
	c := plr.Status.GetCondition(apis.ConditionSucceeded)
	return c != nil && c.Status == corev1.ConditionUnknown && c.Reason == ReasonRunning
}

// ReadLog returns the run's log so far ("" when it has none yet).
func (r *Runner) ReadLog(ns, name string) string {
	b, _ := os.ReadFile(r.LogPath(ns, name))
	return string(b)
}
