package renovate_test

// Copies of test/plrunner's test helpers (runner_test.go), for the GitLab test
// until the shared harness lands: a kube-apiserver with Tekton's CRD and a runner
// on it. Named gitlab* so that they cannot clash with the harness's own.

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"knative.dev/pkg/apis"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nudgeflow/nudgeflow/test/plrunner"
)

// gitlabStartRunner starts a kube-apiserver with Tekton's PipelineRun CRD and a
// runner with toolPath first on the steps' PATH; it returns the client and the
// runner's state directory (runs/<ns>/<name>.log).
func gitlabStartRunner(t *testing.T, toolPath string) (ctrlclient.Client, string) {
	t.Helper()
	require.NotEmpty(t, os.Getenv("KUBEBUILDER_ASSETS"), "set KUBEBUILDER_ASSETS=$(hack/tools.sh assets)")
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "crds")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, env.Stop()) })
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, tektonv1.AddToScheme(scheme))
	c, err := ctrlclient.NewWithWatch(cfg, ctrlclient.Options{Scheme: scheme})
	require.NoError(t, err)

	state := t.TempDir()
	// Renovate keeps its clones and its package cache (digest lookups included)
	// below os.tmpdir(); a pod has its own /tmp, so this test's runs get their
	// own, and no other test's cached digest can stand in for the registry's.
	r := &plrunner.Runner{Client: c, StateDir: state, ToolPath: toolPath, Env: append(os.Environ(), "TMPDIR="+t.TempDir())}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	return c, state
}

// gitlabRelease lifts the pending status nudgeflow creates the run with.
func gitlabRelease(t *testing.T, c ctrlclient.Client, ns, name string) {
	t.Helper()
	plr := gitlabGetRun(t, c, ns, name)
	patch := ctrlclient.MergeFrom(plr.DeepCopy())
	plr.Spec.Status = ""
	require.NoError(t, c.Patch(context.Background(), plr, patch))
}

func gitlabGetRun(t *testing.T, c ctrlclient.Client, ns, name string) *tektonv1.PipelineRun {
	t.Helper()
	var plr tektonv1.PipelineRun
	require.NoError(t, c.Get(context.Background(), ctrlclient.ObjectKey{Namespace: ns, Name: name}, &plr))
	return &plr
}

func gitlabSucceeded(t *testing.T, c ctrlclient.Client, ns, name string) *apis.Condition {
	t.Helper()
	return gitlabGetRun(t, c, ns, name).Status.GetCondition(apis.ConditionSucceeded)
}
