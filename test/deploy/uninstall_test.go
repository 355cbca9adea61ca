package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	enumspb "go.temporal.io/api/enums/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// deletionWaitTimeout bounds the waits for a namespace or its objects to go.
const deletionWaitTimeout = 2 * time.Minute

// readmeBlocks are deploy/README.md's shell blocks marked
// <!-- deploy-test: ID --> (indented as list items or not), by ID.
func readmeBlocks(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(deployDir("README.md"))
	require.NoError(t, err)
	re := regexp.MustCompile("(?s)<!-- deploy-test: ([a-z0-9-]+) -->\n( *)```sh\n(.*?)\n *```")
	out := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
		var lines []string
		for _, l := range strings.Split(m[3], "\n") {
			lines = append(lines, strings.TrimPrefix(l, m[2]))
		}
		out[m[1]] = strings.Join(lines, "\n")
	}
	return out
}

// runBlock runs a block of deploy/README.md with bash, as an operator would paste
// it: the cluster administrator's kubeconfig, kubectl on PATH, in dir. prelude goes
// before it (a kubectl function adding --dry-run=server, for the blocks that would
// remove what the package's other tests share); env are more variables (NAME=value).
func runBlock(t *testing.T, id, dir, prelude string, env ...string) string {
	t.Helper()
	block, ok := readmeBlocks(t)[id]
	require.True(t, ok, "deploy/README.md has the block <!-- deploy-test: %s -->", id)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", prelude+"\n"+block)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+admin(t), "PATH="+filepath.Dir(tool(t, "kubectl"))+":"+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "deploy/README.md block %s:\n%s\n---\n%s", id, block, out)
	return string(out)
}

// dryRunKubectl makes a block's kubectl calls server-side dry runs.
const dryRunKubectl = `kubectl() { command kubectl "$@" --dry-run=server; }`

// heldTenant is a tenant namespace holding what nudgeflow holds: an active
// ChangeGroup (the bridge's finalizer on it) and a push build the build-routing
// webhook held (its finalizer).
type heldTenant struct {
	ns    string
	group *appstudiov1alpha1.ChangeGroup
	build *tektonv1.PipelineRun
}

func newHeldTenant(t *testing.T) heldTenant {
	t.Helper()
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)
	runChangeGroup(t, ns) // the group, with the bridge's finalizer
	build := pushBuild("operand-on-push", "operand", strings.Repeat("7", 40))
	build.Namespace = ns
	require.NoError(t, w.Kube.Create(ctx, build))
	require.True(t, builds.Holds(build), "the deployed build-routing webhook held the build: %v", build.Finalizers)
	var cg appstudiov1alpha1.ChangeGroup
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "bundle-update"}, &cg))
	return heldTenant{ns: ns, group: &cg, build: build}
}

// namespaceDeleter does what kube-controller-manager's namespace controller does
// for a namespace being deleted (k8s.io/kubernetes pkg/controller/namespace/deletion):
// it deletes the collection of every namespaced resource the API server serves
// (list and deletecollection), and once none is left removes the namespace's
// "kubernetes" finalizer, which lets the API server delete it. The test world runs
// no controllers; this stands in for that one.
type namespaceDeleter struct {
	dyn       dynamic.Interface
	core      kubernetes.Interface
	resources []schema.GroupVersionResource
}

func newNamespaceDeleter(t *testing.T) *namespaceDeleter {
	t.Helper()
	cfg := world.Get(t).Config()
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	lists, err := disc.ServerPreferredNamespacedResources()
	// A group whose discovery fails is skipped, as the controller skips it (and
	// reports it); the test world serves every group it has.
	var failed *discovery.ErrGroupDiscoveryFailed
	if err != nil && !errors.As(err, &failed) {
		require.NoError(t, err)
	}
	d := &namespaceDeleter{dyn: dynamic.NewForConfigOrDie(cfg), core: kubernetes.NewForConfigOrDie(cfg)}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		require.NoError(t, err)
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") && slices.Contains(r.Verbs, "deletecollection") && slices.Contains(r.Verbs, "list") {
				d.resources = append(d.resources, gv.WithResource(r.Name))
			}
		}
	}
	require.NotEmpty(t, d.resources)
	return d
}

// pass is one pass of the controller over namespace ns: it deletes what is left
// and returns what remains (objects held by finalizers). With nothing left it
// finalizes the namespace.
func (d *namespaceDeleter) pass(t *testing.T, ns string) []*unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	background := metav1.DeletePropagationBackground
	var left []*unstructured.Unstructured
	for _, gvr := range d.resources {
		err := d.dyn.Resource(gvr).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
			require.NoError(t, err, "deleting the collection of %s in %s", gvr, ns)
		}
		list, err := d.dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err, "listing %s in %s", gvr, ns)
		for i := range list.Items {
			left = append(left, &list.Items[i])
		}
	}
	if len(left) > 0 {
		return left
	}
	nsObj, err := d.core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	require.NotNil(t, nsObj.DeletionTimestamp, "namespace %s is being deleted", ns)
	nsObj.Spec.Finalizers = slices.DeleteFunc(nsObj.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
	_, err = d.core.CoreV1().Namespaces().Finalize(ctx, nsObj, metav1.UpdateOptions{})
	if !apierrors.IsNotFound(err) {
		require.NoError(t, err, "finalizing namespace %s", ns)
	}
	return nil
}

// deleteNamespace deletes ns as `kubectl delete namespace` does (without waiting)
// and runs one pass of the namespace controller: it returns what is left.
func (d *namespaceDeleter) deleteNamespace(t *testing.T, ns string) []*unstructured.Unstructured {
	t.Helper()
	out, err := kubectl(t, nil, "delete", "namespace", ns, "--wait=false")
	require.NoError(t, err, out)
	return d.pass(t, ns)
}

// waitGone runs the namespace controller until ns is gone.
func (d *namespaceDeleter) waitGone(t *testing.T, ns, why string) {
	t.Helper()
	world.Eventually(t, deletionWaitTimeout, why, func() (bool, error) {
		left := d.pass(t, ns)
		_, err := d.core.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("namespace %s: %v; left: %s", ns, err, describe(left))
	})
}

func describe(objs []*unstructured.Unstructured) string {
	var out []string
	for _, o := range objs {
		out = append(out, fmt.Sprintf("%s/%s finalizers=%v", o.GetKind(), o.GetName(), o.GetFinalizers()))
	}
	return strings.Join(out, ", ")
}

// requireHeldByNudgeflow: what is left of a deleted tenant namespace is exactly its
// group and its build, each being deleted and held by nudgeflow's finalizer.
func requireHeldByNudgeflow(t *testing.T, h heldTenant, left []*unstructured.Unstructured) {
	t.Helper()
	want := map[string]string{"ChangeGroup/" + h.group.Name: konflux.FinalizerChangeGroup, "PipelineRun/" + h.build.Name: konflux.FinalizerBuildRouting}
	require.Len(t, left, len(want), "left in %s: %s", h.ns, describe(left))
	for _, o := range left {
		fin, ok := want[o.GetKind()+"/"+o.GetName()]
		require.True(t, ok, "%s/%s is left in %s", o.GetKind(), o.GetName(), h.ns)
		require.NotNil(t, o.GetDeletionTimestamp(), "%s/%s is being deleted", o.GetKind(), o.GetName())
		require.Contains(t, o.GetFinalizers(), fin, "%s/%s waits on nudgeflow", o.GetKind(), o.GetName())
	}
}

// workflowStatus is the status of a workflow's latest run.
func workflowStatus(t *testing.T, id string) (enumspb.WorkflowExecutionStatus, error) {
	t.Helper()
	desc, err := world.Get(t).TemporalClient.DescribeWorkflowExecution(context.Background(), id, "")
	if err != nil {
		return 0, err
	}
	return desc.WorkflowExecutionInfo.Status, nil
}

// A tenant namespace deleted while the bridge is away. What
// nudgeflow holds (an active group, a held build) keeps it Terminating, as it
// should: the bridge cancels the group's workflow and routes the build before it
// lets them go. But the bridge's fail-closed webhooks must not stand in the way of
// the writes that end them: one namespace is released by the bridge when it
// returns, the other, with the bridge away, by deploy/README.md's release block,
// as written. Meanwhile the webhooks still refuse a spec change.
func TestTenantNamespaceDeletionWithTheBridgeAway(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	_, webhookPort, _ := w.WebhookServer()
	c := shippedCluster(t)
	returns, byHand := newHeldTenant(t), newHeldTenant(t)
	deleter := newNamespaceDeleter(t)

	c.bridge.stop()
	// The webhooks are still registered and fail closed: a spec change is refused
	// while nobody answers, a metadata write is not sent to them.
	cg := returns.group.DeepCopy()
	cg.Spec.Timeout = &metav1.Duration{Duration: time.Hour}
	err := w.Kube.Update(ctx, cg)
	require.Error(t, err, "a spec change waits for the bridge")
	require.Contains(t, err.Error(), "vchangegroup.nudgeflow.konflux-ci.dev", "refused by the unreachable webhook")
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(returns.group), cg))
	cg.Labels = map[string]string{"team": "a"}
	require.NoError(t, w.Kube.Update(ctx, cg), "a metadata write is admitted without the bridge")

	// The bridge returns: it finishes the deletion by itself.
	requireHeldByNudgeflow(t, returns, deleter.deleteNamespace(t, returns.ns))
	bridge := startPod(t, c.m, deploymentPod(c.m.deployment(t, "nudgeflow-bridge")), podOptions{temporalAddress: w.Temporal.Address, webhookPort: webhookPort})
	bridge.waitReady(startupTimeout)
	deleter.waitGone(t, returns.ns, "the returning bridge releases the group and the build, and the namespace goes")
	world.Eventually(t, scenarioWaitTimeout, "the returning bridge ended the deleted group's workflow", func() (bool, error) {
		status, err := workflowStatus(t, returns.group.Status.WorkflowID)
		return status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, err
	})

	// The bridge is away for good: deploy/README.md's release block, as written.
	bridge.stop()
	requireHeldByNudgeflow(t, byHand, deleter.deleteNamespace(t, byHand.ns))
	runBlock(t, "release-held", t.TempDir(), "")
	deleter.waitGone(t, byHand.ns, "the release block lets the namespace go without the bridge")
	status, err := workflowStatus(t, byHand.group.Status.WorkflowID)
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, status, "nobody ended the group's workflow")
	runBlock(t, "terminate-workflows", t.TempDir(), "", "NS="+byHand.ns, "TEMPORAL_ADDRESS="+w.Temporal.Address,
		"PATH="+filepath.Dir(os.Getenv("TEMPORAL_CLI"))+":"+filepath.Dir(tool(t, "kubectl"))+":"+os.Getenv("PATH"))
	world.Eventually(t, scenarioWaitTimeout, "the block terminates the deleted namespace's workflows", func() (bool, error) {
		status, err := workflowStatus(t, byHand.group.Status.WorkflowID)
		return status == enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, err
	})
}

// deploy/README.md's uninstall, its blocks run as written in order: the bridge and
// the worker end every group (the bridge removes its finalizer once the workflow is
// cancelled), and, with both stopped, the release block lets go of a held build and
// of a group the bridge never finalized. The blocks that remove cluster-wide objects
// the package's other tests share (the webhook configurations, the CRDs, the
// namespace) run as server-side dry runs: the API server checks each delete, and
// keeps the world.
func TestUninstallReleasesEverythingHeld(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	c := shippedCluster(t)
	ended := newHeldTenant(t)

	runBlock(t, "uninstall-stop-intake", t.TempDir(), dryRunKubectl)
	runBlock(t, "uninstall-end-groups", t.TempDir(), "")
	err := w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(ended.group), &appstudiov1alpha1.ChangeGroup{})
	require.True(t, apierrors.IsNotFound(err), "the bridge ended the group and let it go: %v", err)
	runBlock(t, "uninstall-end-groups", t.TempDir(), "") // run again with no group left: nothing to wait for

	// A group a tenant created after step 2, deleted once the bridge is stopped:
	// its finalizer stays.
	stuck := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "left-behind", Namespace: ended.ns,
		Finalizers: []string{"example.com/keep"}}, Spec: ended.group.Spec}
	require.NoError(t, w.Kube.Create(ctx, stuck))
	world.Eventually(t, scenarioWaitTimeout, "the bridge takes the new group", func() (bool, error) {
		err := w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(stuck), stuck)
		return err == nil && slices.Contains(stuck.Finalizers, konflux.FinalizerChangeGroup), err
	})

	runBlock(t, "uninstall-stop", t.TempDir(), "")
	for _, p := range []*pod{c.bridge, c.worker, c.receiver} {
		p.stop() // what the kubelet does when the Deployments scale to zero
	}
	t.Cleanup(func() {
		require.NoError(t, install(t, findVariant(t, variants(t), "cert-manager")), "restoring the Deployments' replicas")
	})
	for _, name := range []string{"nudgeflow-bridge", "nudgeflow-worker"} {
		d := c.m.deployment(t, name)
		require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(d), d))
		require.Zero(t, *d.Spec.Replicas, "%s is scaled to zero", name)
	}
	require.NoError(t, w.Kube.Delete(ctx, stuck))
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(ended.build), ended.build))
	require.True(t, builds.Holds(ended.build), "the build is still held for routing")

	runBlock(t, "release-held", t.TempDir(), "")
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(ended.build), ended.build))
	require.False(t, builds.Holds(ended.build), "the build is released")
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(stuck), stuck))
	require.Equal(t, []string{"example.com/keep"}, stuck.Finalizers, "only nudgeflow's finalizer is removed")
	stuck.Finalizers = nil
	require.NoError(t, w.Kube.Update(ctx, stuck))

	// The rest, deleted with the kustomization installed: a server-side dry run.
	scratch := t.TempDir()
	rel, err := filepath.Rel(scratch, deployDir("overlays", "cert-manager"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(scratch, "kustomization.yaml"),
		[]byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - "+rel+"\n"), 0o600))
	out := runBlock(t, "uninstall-delete", scratch, dryRunKubectl)
	for _, want := range []string{
		`customresourcedefinition.apiextensions.k8s.io "changegroups.appstudio.redhat.com" deleted (server dry run)`,
		`namespace "` + systemNamespace + `" deleted (server dry run)`,
	} {
		require.Contains(t, out, want)
	}
}
