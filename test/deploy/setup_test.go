package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/nudgeflow/nudgeflow/internal/searchattr"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// `nudgeflow temporal setup`, as the Job nudgeflow-temporal-setup of the manifests
// runs it (its command, args, env from the ConfigMap, mounts, mutual TLS; started
// like the Deployments' pods), against a bare Temporal (the dev server with only the default
// namespace and no custom search attribute, like a fresh Helm chart install): it
// creates the namespace, registers every search attribute nudgeflow sets, and the
// next run, as each GitOps sync starts it, changes nothing. Without
// --create-namespace a missing namespace is an error; a namespace holding one of
// the attributes with another type is refused, naming it.
func TestTemporalSetup(t *testing.T) {
	cli, err := localenv.TemporalCLI()
	require.NoError(t, err)
	port, err := localenv.FreePort()
	require.NoError(t, err)
	httpPort, err := localenv.FreePort()
	require.NoError(t, err)
	metricsPort, err := localenv.FreePort()
	require.NoError(t, err)
	logs, err := os.Create(filepath.Join(world.Get(t).LogDir, "setup-temporal.log"))
	require.NoError(t, err)
	address := "127.0.0.1:" + strconv.Itoa(port)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath:  cli,
		ClientOptions: &client.Options{HostPort: address, Namespace: "default"},
		LogLevel:      "warn",
		ExtraArgs:     []string{"--http-port", strconv.Itoa(httpPort), "--metrics-port", strconv.Itoa(metricsPort)},
		Stdout:        logs, Stderr: logs,
	})
	require.NoError(t, err)
	defer func() { _ = srv.Stop() }()

	base := findVariant(t, variants(t), "base")
	// The Job mounts the Temporal client certificate's Secret (mutual TLS, through
	// the test's TLS front of this server).
	applied(t)
	temporalTLSSecret(t, systemNamespace)
	job := setupJob(t, base.objs)
	cm := temporalConfigMap(t, base.objs, job.Spec.Template.Spec.Containers[0]).Data
	// The ConfigMap's values, with the address pointing at this server.
	env := []string{"TEMPORAL_ADDRESS=" + address, "TEMPORAL_NAMESPACE=" + cm["TEMPORAL_NAMESPACE"]}
	setup := func(extra ...string) (string, error) {
		cmd := exec.CommandContext(ctx, nudgeflowBinary(t), append([]string{"temporal", "setup"}, extra...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	runJob := func() string {
		t.Helper()
		p := startPod(t, base.objs, jobPod(job), podOptions{temporalAddress: address})
		require.Equal(t, 0, p.wait(time.Minute), "the Job's pod succeeds: %s", p.logs())
		require.NotNil(t, p.temporal, "the Job connects with mutual TLS")
		require.Contains(t, p.temporal.verified(), "nudgeflow", "with the client certificate of the Secret it mounts")
		return p.logs()
	}

	out, err := setup()
	require.Error(t, err, "without --create-namespace a missing namespace is an error")
	require.Contains(t, out, "does not exist")

	out = runJob()
	require.Contains(t, out, "namespace nudgeflow registered")
	require.Contains(t, out, "search attribute ChangeGroup (Keyword) added")
	require.Contains(t, out, "namespace nudgeflow is ready for nudgeflow")

	c := srv.Client()
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "nudgeflow"})
	require.NoError(t, err)
	for name, typ := range searchattr.All() {
		require.Equal(t, typ, list.GetCustomAttributes()[name], "search attribute %s", name)
	}

	out = runJob()
	require.NotContains(t, out, "added", "idempotent: %s", out)
	require.Contains(t, out, "namespace nudgeflow exists")
	require.Contains(t, out, "search attribute ReadyCount (Int) exists")

	// A namespace where Phase is an Int: refused, nothing else added.
	env = []string{"TEMPORAL_ADDRESS=" + address, "TEMPORAL_NAMESPACE=default"}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: "default",
		SearchAttributes: map[string]enumspb.IndexedValueType{"Phase": enumspb.INDEXED_VALUE_TYPE_INT}})
	require.NoError(t, err)
	out, err = setup()
	require.Error(t, err)
	require.Contains(t, out, "Phase is Int, nudgeflow needs Keyword")
	list, err = c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	require.NoError(t, err)
	require.NotContains(t, list.GetCustomAttributes(), "ChangeGroup")
	require.False(t, strings.Contains(out, "added"))
}
