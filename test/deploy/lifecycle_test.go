package deploy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// lifecycleNamespace is where TestInstallUpgradeUninstallAsDocumented installs
// nudgeflow: a namespace no other test uses, created by the install block itself.
const lifecycleNamespace = "nudgeflow-lifecycle"

// release writes the operator's kustomization of a release into dir: the
// cert-manager overlay in lifecycleNamespace, with the release's image digests.
func release(t *testing.T, dir, digest string) {
	t.Helper()
	rel, err := filepath.Rel(dir, deployDir("overlays", "cert-manager"))
	require.NoError(t, err)
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + lifecycleNamespace +
		"\nresources:\n  - " + rel + "\nimages:\n" +
		"  - name: quay.io/konflux-ci/nudgeflow\n    newName: quay.io/you/nudgeflow\n    digest: sha256:" + digest + "\n" +
		"  - name: quay.io/konflux-ci/mintmaker-renovate-image\n    digest: sha256:" + digest + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o600))
}

// serveWorldWebhooks points nudgeflow's webhook configurations, as the install
// just applied them (calling the bridge's Service, which this world cannot route
// to), at the address the bridge started from the manifests listens on, with the
// CA of its certificate: what the Service routing and cert-manager's CA injection
// do on a cluster. It is how envtest registered them for the package.
func serveWorldWebhooks(t *testing.T) {
	t.Helper()
	w := world.Get(t)
	ctx := context.Background()
	opts := w.ControlPlane.Env.WebhookInstallOptions
	put := func(got ctrlclient.Object, set func()) {
		err := w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(got), got)
		set()
		if apierrors.IsNotFound(err) {
			got.SetResourceVersion("")
			require.NoError(t, w.Kube.Create(ctx, got))
			return
		}
		require.NoError(t, err)
		require.NoError(t, w.Kube.Update(ctx, got))
	}
	for _, want := range opts.MutatingWebhooks {
		got := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: want.Name}}
		put(got, func() { got.Webhooks = want.Webhooks })
	}
	for _, want := range opts.ValidatingWebhooks {
		got := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: want.Name}}
		put(got, func() { got.Webhooks = want.Webhooks })
	}
}

// dropWorldWebhooks deletes the package's webhook configurations before a block
// applies nudgeflow's: a server-side apply would merge the Service the manifests
// name into the URL envtest registered (another field manager's), which the API
// server refuses (a webhook calls a URL or a Service). On a cluster the apply
// finds its own objects; serveWorldWebhooks serves them again after it.
func dropWorldWebhooks(t *testing.T) {
	t.Helper()
	w := world.Get(t)
	ctx := context.Background()
	opts := w.ControlPlane.Env.WebhookInstallOptions
	for _, h := range opts.MutatingWebhooks {
		require.NoError(t, ctrlclient.IgnoreNotFound(w.Kube.Delete(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: h.Name}})))
	}
	for _, h := range opts.ValidatingWebhooks {
		require.NoError(t, ctrlclient.IgnoreNotFound(w.Kube.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: h.Name}})))
	}
}

// liveImage is the image the named Deployment or Job in lifecycleNamespace runs, as
// stored.
func liveImage(t *testing.T, obj ctrlclient.Object) string {
	t.Helper()
	obj.SetNamespace(lifecycleNamespace)
	require.NoError(t, world.Get(t).Kube.Get(context.Background(), ctrlclient.ObjectKeyFromObject(obj), obj))
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return o.Spec.Template.Spec.Containers[0].Image
	case *batchv1.Job:
		return o.Spec.Template.Spec.Containers[0].Image
	}
	t.Fatalf("%T", obj)
	return ""
}

// runJob runs the setup Job's container as written, as the Job controller and the
// kubelet would, and requires it to succeed.
func runJob(t *testing.T, m manifests) {
	t.Helper()
	w := world.Get(t)
	job := startPod(t, m, jobPod(setupJob(t, m)), podOptions{temporalAddress: w.Temporal.Address})
	require.Zero(t, job.wait(startupTimeout), "the setup Job succeeds; its log:\n%s", job.logs())
}

// deploy/README.md's plain-Kubernetes install and upgrade, their blocks run as
// written against the real API server, in a namespace of their own: the install
// creates the namespace and Secrets and applies everything; the pods started from
// what was applied run a ChangeGroup. The upgrade applies everything but the
// Deployments with the new setup Job, then the Deployments: in between, the
// Deployments still run the old image and the new Job the new one; after it, the
// group of the old version still runs on the new pods, and new groups start. The
// uninstall's blocks are run by TestUninstallReleasesEverythingHeld.
func TestInstallUpgradeUninstallAsDocumented(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	_, webhookPort, _ := w.WebhookServer()
	applied(t) // the shipped install, which the package's other tests use, is restored after
	t.Cleanup(func() {
		serveWorldWebhooks(t)
		require.NoError(t, install(t, findVariant(t, variants(t), "cert-manager")), "re-binding the shipped namespace's ServiceAccounts")
	})

	dir := t.TempDir()
	for name, data := range testTemporalPKI(t).secret {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
	env := []string{"NS=" + lifecycleNamespace, "GITHUB_WEBHOOK_SECRET=" + forgeWebhookSecret}
	oldDigest, newDigest := strings.Repeat("1a", 32), strings.Repeat("2b", 32)

	// Install.
	release(t, dir, oldDigest)
	dropWorldWebhooks(t)
	runBlock(t, "install", dir, "", env...)
	serveWorldWebhooks(t)
	issueServingCerts(t, lifecycleNamespace)
	_, v1 := kustomize(t, dir)
	require.Equal(t, "quay.io/you/nudgeflow@sha256:"+oldDigest, liveImage(t, &appsv1.Deployment{ObjectMeta: v1.deployment(t, "nudgeflow-worker").ObjectMeta}))
	runJob(t, v1)
	c := &cluster{m: v1}
	c.worker = startPod(t, v1, deploymentPod(v1.deployment(t, "nudgeflow-worker")), podOptions{temporalAddress: w.Temporal.Address})
	c.bridge = startPod(t, v1, deploymentPod(v1.deployment(t, "nudgeflow-bridge")), podOptions{temporalAddress: w.Temporal.Address, webhookPort: webhookPort})
	c.receiver = startPod(t, v1, deploymentPod(v1.deployment(t, "nudgeflow-receiver")), podOptions{webhookPort: webhookPort})
	for _, p := range []*pod{c.worker, c.bridge, c.receiver} {
		p.waitReady(startupTimeout)
	}
	before := w.Namespace(t)
	runChangeGroup(t, before)
	var group appstudiov1alpha1.ChangeGroup
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: before, Name: "bundle-update"}, &group))

	// Upgrade, first step: everything but the Deployments, and the new setup Job.
	release(t, dir, newDigest)
	dropWorldWebhooks(t)
	runBlock(t, "upgrade-setup", dir, "", env...)
	serveWorldWebhooks(t)
	_, v2 := kustomize(t, dir)
	for _, name := range []string{"nudgeflow-bridge", "nudgeflow-worker", "nudgeflow-receiver"} {
		require.Equal(t, "quay.io/you/nudgeflow@sha256:"+oldDigest, liveImage(t, &appsv1.Deployment{ObjectMeta: v2.deployment(t, name).ObjectMeta}),
			"%s waits for the setup Job", name)
	}
	require.Equal(t, "quay.io/you/nudgeflow@sha256:"+newDigest, liveImage(t, &batchv1.Job{ObjectMeta: setupJob(t, v2).ObjectMeta}), "the new setup Job")
	runJob(t, v2)

	// Second step: the Deployments, which roll to the new pods.
	dropWorldWebhooks(t)
	runBlock(t, "upgrade-rollout", dir, "", env...)
	serveWorldWebhooks(t)
	for _, name := range []string{"nudgeflow-bridge", "nudgeflow-worker", "nudgeflow-receiver"} {
		require.Equal(t, "quay.io/you/nudgeflow@sha256:"+newDigest, liveImage(t, &appsv1.Deployment{ObjectMeta: v2.deployment(t, name).ObjectMeta}), name)
	}
	for _, p := range []*pod{c.bridge, c.worker, c.receiver} {
		p.stop()
	}
	worker := startPod(t, v2, deploymentPod(v2.deployment(t, "nudgeflow-worker")), podOptions{temporalAddress: w.Temporal.Address})
	require.Equal(t, "quay.io/konflux-ci/mintmaker-renovate-image@sha256:"+newDigest, worker.env["RENOVATE_IMAGE"],
		"the new worker gives its nudge runs the new Renovate image")
	bridge := startPod(t, v2, deploymentPod(v2.deployment(t, "nudgeflow-bridge")), podOptions{temporalAddress: w.Temporal.Address, webhookPort: webhookPort})
	worker.waitReady(startupTimeout)
	bridge.waitReady(startupTimeout)
	runChangeGroup(t, w.Namespace(t))
	desc, err := w.TemporalClient.DescribeWorkflowExecution(ctx, group.Status.WorkflowID, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.WorkflowExecutionInfo.Status, "the group of the old version still runs")
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(&group), &group))
	require.Equal(t, "0/1", group.Status.Ready)
}
