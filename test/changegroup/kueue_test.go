package changegroup_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"gomodules.xyz/jsonpatch/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/changegroupcontroller"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// Konflux queues nudge PipelineRuns with tekton-kueue, whose mutating
// webhook sets spec.status PipelineRunPending on every PipelineRun it admits; it is
// called after nudgeflow's interceptor (the API server calls mutating webhook
// configurations in the order of their names, k8s.io/apiserver
// pkg/admission/configuration/mutating_webhook_manager.go, and "tekton-kueue-…" sorts
// after nudgeflow's), and Kueue later admits the run by clearing spec.status. A nudge
// a ChangeGroup holds must never start all the same, whichever service created it:
//   - reinvocation: the interceptor is reinvoked after tekton-kueue's webhook and the
//     run is stored Cancelled (the create's answer says so: nothing else can act
//     before the run is stored);
//   - the held-nudge reconciler: Kueue's admission (an update, which no webhook here
//     sees) or a pend stored because the reinvocation failed open is cancelled again.
//
// nudgeflow's own Renovate run that no group holds is released by the worker and
// stays released.
func TestHeldNudgesStayCancelledUnderKueue(t *testing.T) {
	s := newScenario(t, "operand-a", "operand-b")
	ctx := context.Background()
	kueue := installKueueStandIn(t, s.w, s.ns)
	nudgeflowFirst(t, s.w, kueue.configName)
	s.createGroup("g", []string{"operand-a", "operand-b"}, 0)
	s.explainOnFailure("g")

	// Builds of operand-a only: the group keeps collecting for the whole test. No
	// Pipelines as Code event type, so the bridge's build routing leaves them to the
	// nudge PipelineRuns this test creates, as build-service and integration-service
	// would.
	buildBS := s.buildRunWith("operand-a", digestOf("operand-a", 1), time.Now().Add(-time.Hour), nil)
	buildIS := s.buildRunWith("operand-a", digestOf("operand-a", 2), time.Now(), nil)
	held := []*tektonv1.PipelineRun{
		buildServiceNudge(s.ns, "operand-a", []string{"bundle"}, buildBS),
		integrationServiceNudge(s.ns, "operand-a", []string{"bundle"}, buildIS),
		workerRun(s.ns, "operand-a", "bundle", buildIS),
	}
	unheld := workerRun(s.ns, "operand-a", "not-in-any-group", buildIS)

	if !t.Run("reinvocation cancels at creation", func(t *testing.T) {
		for _, plr := range held {
			require.NoError(t, s.w.Kube.Create(ctx, plr))
			// The create's answer is the run as stored: only admission wrote it.
			require.Equal(t, tektonv1.PipelineRunSpecStatusCancelled, string(plr.Spec.Status),
				"%s is stored cancelled: the interceptor, reinvoked after tekton-kueue's webhook, put the cancel back", plr.Name)
			require.Equal(t, "bundle=g", plr.Annotations[konflux.AnnotationHeldBy], plr.Name)
			require.Equal(t, "pipelines-queue", plr.Labels[kueueQueueLabel], "%s went through tekton-kueue's webhook", plr.Name)
			saw := kueue.sawOn(plr.Name)
			require.Equal(t, tektonv1.PipelineRunSpecStatusCancelled, saw.status,
				"tekton-kueue's webhook was called after nudgeflow's: it saw %s already cancelled", plr.Name)
			require.Equal(t, "bundle=g", saw.heldBy)
		}
		require.NoError(t, s.w.Kube.Create(ctx, unheld))
		require.Equal(t, tektonv1.PipelineRunSpecStatusPending, string(unheld.Spec.Status), "nudgeflow's own run is created pending")
		require.False(t, konflux.HeldAtAdmission(unheld.Annotations), "no group holds %s: %v", unheld.Name, unheld.Annotations)
		// The worker releases it once its ConfigMap and Secret exist.
		setSpecStatus(t, s.w, unheld, "")
	}) {
		return
	}

	started := 0
	t.Run("the reconciler cancels again", func(t *testing.T) {
		for _, plr := range held {
			// A pend stored as it is when the interceptor's reinvocation fails open.
			setSpecStatus(t, s.w, plr, tektonv1.PipelineRunSpecStatusPending)
			last, ok := waitCancelled(t, s.w, plr, 30*time.Second)
			assert.True(t, ok, "%s re-pended is cancelled again (spec.status %q)", plr.Name, last.Spec.Status)
			// Kueue admits the run: spec.status cleared, the run would start.
			setSpecStatus(t, s.w, plr, "")
			if last, ok = waitCancelled(t, s.w, plr, 30*time.Second); !ok && last.Spec.Status == "" && !last.IsDone() {
				started++
			}
			assert.True(t, ok, "%s admitted by Kueue is cancelled again (spec.status %q)", plr.Name, last.Spec.Status)
		}
		for _, plr := range held {
			waitEvent(t, s.w, plr, changegroupcontroller.ReasonHoldReapplied, "another webhook or controller changed spec.status")
		}
	})
	// Held runs seen started (spec.status empty while not done) once the reconciler
	// had its deadline.
	fmt.Printf("held-under-kueue started=%d\n", started)
	require.Zero(t, started, "held nudge PipelineRuns started under Kueue")

	// The unheld run was released before the held runs were admitted and cancelled
	// again: the reconciler had processed later events by then. It carries none of
	// the interceptor's annotations, so the reconciler's watch never passes it on.
	var got tektonv1.PipelineRun
	require.NoError(t, s.w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(unheld), &got))
	require.Empty(t, string(got.Spec.Status), "the worker's release of a run no group holds stands")
	require.Empty(t, eventsOf(t, s.w, &got, changegroupcontroller.ReasonHoldReapplied))
	// The group has the build either way: held, not lost.
	s.waitFor("g", "the group has operand-a's newest build", 60*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool {
		return statusOf(cg, "operand-a").NewBuild == digestOf("operand-a", 2)
	})
}

// kueueQueueLabel is the label tekton-kueue's webhook puts on every PipelineRun
// (pkg/common QueueLabel), with the configured queue's name.
const kueueQueueLabel = "kueue.x-k8s.io/queue-name"

// kueueStandIn is tekton-kueue's mutating webhook as published
// (internal/webhook/v1/pipelinerun_webhook.go Default; config/webhook/manifests.yaml
// with the namePrefix of config/default): spec.status PipelineRunPending and the
// queue label on every PipelineRun created, failurePolicy Fail, no reinvocation.
// It remembers what the API server sent it, to tell which webhooks ran before it.
type kueueStandIn struct {
	configName string
	// managedBy, when set, is written as spec.managedBy too, as tekton-kueue does
	// with multiKueueOverride.
	managedBy string
	mu        sync.Mutex
	seen      map[string]kueueSaw
}

type kueueSaw struct{ status, heldBy string }

func (k *kueueStandIn) Handle(_ context.Context, req admission.Request) admission.Response {
	var run struct {
		Metadata struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec *struct {
			Status string `json:"status"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(req.Object.Raw, &run); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding PipelineRun: %w", err))
	}
	saw := kueueSaw{heldBy: run.Metadata.Annotations[konflux.AnnotationHeldBy]}
	ops := []jsonpatch.JsonPatchOperation{}
	if run.Spec != nil {
		saw.status = run.Spec.Status
		ops = append(ops, jsonpatch.NewOperation("add", "/spec/status", "PipelineRunPending"))
	} else {
		ops = append(ops, jsonpatch.NewOperation("add", "/spec", map[string]any{"status": "PipelineRunPending"}))
	}
	if k.managedBy != "" {
		ops = append(ops, jsonpatch.NewOperation("add", "/spec/managedBy", k.managedBy))
	}
	if run.Metadata.Labels == nil {
		ops = append(ops, jsonpatch.NewOperation("add", "/metadata/labels", map[string]any{kueueQueueLabel: "pipelines-queue"}))
	} else if _, ok := run.Metadata.Labels[kueueQueueLabel]; !ok {
		ops = append(ops, jsonpatch.NewOperation("add", "/metadata/labels/"+strings.ReplaceAll(kueueQueueLabel, "/", "~1"), "pipelines-queue"))
	}
	k.mu.Lock()
	k.seen[req.Name] = saw
	k.mu.Unlock()
	return admission.Patched("", ops...)
}

// sawOn is what the stand-in received for the run named name.
func (k *kueueStandIn) sawOn(name string) kueueSaw {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.seen[name]
}

// installKueueStandIn serves the stand-in from this process over TLS and registers
// it with the API server for namespace ns only (the package's other tests run
// without Kueue), waiting until the API server calls it.
func installKueueStandIn(t *testing.T, w *world.World, ns string) *kueueStandIn {
	t.Helper()
	return installKueueStandInWith(t, w, ns, "")
}

// installKueueStandInWith installs the stand-in writing spec.managedBy too ("":
// not).
func installKueueStandInWith(t *testing.T, w *world.World, ns, managedBy string) *kueueStandIn {
	t.Helper()
	ctx := context.Background()
	k := &kueueStandIn{configName: "tekton-kueue-mutating-webhook-configuration-" + ns, managedBy: managedBy, seen: map[string]kueueSaw{}}
	const path = "/mutate-tekton-dev-v1-pipelinerun"
	mux := http.NewServeMux()
	mux.Handle(path, &webhook.Admission{Handler: k})
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: k.configName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "pipelinerun-kueue-defaulter.tekton-kueue.io",
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + path), CABundle: caBundle},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
			TimeoutSeconds:          ptr.To[int32](10),
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"tekton.dev"}, APIVersions: []string{"v1"},
					Resources: []string{"pipelineruns"}},
			}},
		}},
	}
	require.NoError(t, w.Kube.Create(ctx, cfg))
	t.Cleanup(func() {
		if err := w.Kube.Delete(context.Background(), cfg); err != nil {
			t.Errorf("deleting %s: %v", cfg.Name, err)
		}
	})
	// The API server picks the configuration up from its informer: probe with
	// dry-run creates until one comes back pending.
	probes := 0
	world.Eventually(t, 30*time.Second, "the API server calls the tekton-kueue stand-in", func() (bool, error) {
		probes++
		probe := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("kueue-probe-%d", probes), Namespace: ns},
			Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "probe"}}}
		if err := w.Kube.Create(ctx, probe, ctrlclient.DryRunAll); err != nil {
			return false, err
		}
		if probe.Spec.Status != tektonv1.PipelineRunSpecStatusPending {
			return false, fmt.Errorf("probe admitted with spec.status %q", probe.Spec.Status)
		}
		return true, nil
	})
	return k
}

// nudgeflowFirst checks what the ordering relies on: nudgeflow's interceptor is
// registered with reinvocationPolicy IfNeeded (from the generated manifests), in a
// configuration whose name sorts before the stand-in's.
func nudgeflowFirst(t *testing.T, w *world.World, kueueConfig string) {
	t.Helper()
	var list admissionregistrationv1.MutatingWebhookConfigurationList
	require.NoError(t, w.Kube.List(context.Background(), &list))
	for _, c := range list.Items {
		for _, h := range c.Webhooks {
			if h.Name != "nudge-pipelinerun.nudgeflow.konflux-ci.dev" {
				continue
			}
			require.Less(t, c.Name, kueueConfig, "nudgeflow's configuration is called first")
			require.Equal(t, admissionregistrationv1.IfNeededReinvocationPolicy, ptr.Deref(h.ReinvocationPolicy, ""))
			return
		}
	}
	t.Fatal("nudgeflow's interceptor is not registered")
}

// nudgeAnnotations are the annotations build-service and integration-service put
// on a nudge PipelineRun (the same keys: build-service
// internal/controller/renovate_util.go, integration-service tekton/consts/consts.go).
func nudgeAnnotations(source string, targets []string, build *tektonv1.PipelineRun) map[string]string {
	sha := fmt.Sprintf("%x", sha256.Sum256([]byte(build.Name)))[:40]
	return map[string]string{
		"build.appstudio.redhat.com/nudged-components": strings.Join(targets, " "),
		"build.appstudio.redhat.com/nudging-commit":    sha,
		"build.appstudio.redhat.com/nudging-component": source,
		"build.appstudio.redhat.com/nudging-image":     imageOf(source) + ":" + sha,
		"build.appstudio.redhat.com/nudging-pipeline":  build.Name,
	}
}

// renovateSpec is the one-task, one-step pipeline both services embed.
func renovateSpec(name, serviceAccount string) tektonv1.PipelineRunSpec {
	return tektonv1.PipelineRunSpec{
		PipelineSpec: &tektonv1.PipelineSpec{Tasks: []tektonv1.PipelineTask{{Name: "renovate",
			TaskSpec: &tektonv1.EmbeddedTask{TaskSpec: tektonv1.TaskSpec{Steps: []tektonv1.Step{{
				Name: "renovate", Image: renovate.DefaultImage, Command: []string{"bash", "-c", "renovate"},
				EnvFrom: []corev1.EnvFromSource{{Prefix: "TOKEN_", SecretRef: &corev1.SecretEnvSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: name}}}},
			}}}},
		}}},
		TaskRunTemplate: tektonv1.PipelineTaskRunTemplate{ServiceAccountName: serviceAccount},
	}
}

// buildServiceNudge is build-service's nudge PipelineRun (CreateRenovaterPipeline):
// renovate-pipeline-<unix time>-<5 random characters>, the nudging component's
// build ServiceAccount, no spec.status.
func buildServiceNudge(ns, source string, targets []string, build *tektonv1.PipelineRun) *tektonv1.PipelineRun {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	suffix := make([]byte, 5)
	for i := range suffix {
		suffix[i] = letters[rand.IntN(len(letters))]
	}
	name := fmt.Sprintf("renovate-pipeline-%d-%s", time.Now().Unix(), suffix)
	return &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels:      map[string]string{"build.appstudio.redhat.com/type": "nudge"},
			Annotations: nudgeAnnotations(source, targets, build)},
		Spec: renovateSpec(name, "build-pipeline-"+source),
	}
}

// integrationServiceNudge is integration-service's nudge PipelineRun
// (tekton/nudging/nudge_pipeline.go CreateNudgePipelineRun):
// renovate-pipeline-<sha256(build UID)[:12]>, the build's ServiceAccount or
// appstudio-pipeline, no spec.status.
func integrationServiceNudge(ns, source string, targets []string, build *tektonv1.PipelineRun) *tektonv1.PipelineRun {
	name := fmt.Sprintf("renovate-pipeline-%x", sha256.Sum256([]byte(build.UID)))[:len("renovate-pipeline-")+12]
	return &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels:      map[string]string{"build.appstudio.redhat.com/type": "nudge"},
			Annotations: nudgeAnnotations(source, targets, build)},
		Spec: renovateSpec(name, "appstudio-pipeline"),
	}
}

// workerRun is nudgeflow's own Renovate run as the worker creates it
// (activities/renovate): pending until its ConfigMap and Secret exist, named and
// annotated after the Nudge workflow that launched it.
func workerRun(ns, source, target string, build *tektonv1.PipelineRun) *tektonv1.PipelineRun {
	id := fmt.Sprintf("nudge/%s/%s/%s", ns, build.UID, target)
	name := renovateapi.RunName(id, 1)
	annotations := nudgeAnnotations(source, []string{target}, build)
	annotations[renovate.AnnotationWorkflowID] = id
	annotations[renovate.AnnotationAttempt] = "1"
	spec := renovateSpec(name, "build-pipeline-"+source)
	spec.Status = tektonv1.PipelineRunSpecStatusPending
	return &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels:      map[string]string{renovate.LabelType: renovate.LabelTypeNudge, renovate.LabelManagedBy: renovate.ManagedByNudgeflow},
			Annotations: annotations},
		Spec: spec,
	}
}

// setSpecStatus writes spec.status as Kueue (admission: cleared) or a webhook's
// stored pend does: a merge patch of that one field, whatever else changed.
func setSpecStatus(t *testing.T, w *world.World, plr *tektonv1.PipelineRun, status tektonv1.PipelineRunSpecStatus) {
	t.Helper()
	var value any
	if status != "" {
		value = string(status)
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"status": value}})
	require.NoError(t, err)
	require.NoError(t, w.Kube.Patch(context.Background(), plr, ctrlclient.RawPatch(types.MergePatchType, patch)))
}

// waitCancelled polls the run until its spec.status is Cancelled. It returns the
// run as last read and whether it was cancelled by the deadline.
func waitCancelled(t *testing.T, w *world.World, plr *tektonv1.PipelineRun, timeout time.Duration) (*tektonv1.PipelineRun, bool) {
	t.Helper()
	var got tektonv1.PipelineRun
	ok, lastErr := world.Poll(timeout, func() (bool, error) {
		if err := w.Kube.Get(context.Background(), ctrlclient.ObjectKeyFromObject(plr), &got); err != nil {
			return false, err
		}
		return got.Spec.Status == tektonv1.PipelineRunSpecStatusCancelled, nil
	})
	if !ok {
		t.Logf("%s not cancelled after %s: spec.status %q, done %v (last error: %v)", plr.Name, timeout, got.Spec.Status, got.IsDone(), lastErr)
	}
	return &got, ok
}

// eventsOf lists the Events with reason about the run.
func eventsOf(t *testing.T, w *world.World, plr *tektonv1.PipelineRun, reason string) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	require.NoError(t, w.Kube.List(context.Background(), &list, ctrlclient.InNamespace(plr.Namespace)))
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "PipelineRun" && e.InvolvedObject.Name == plr.Name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// waitEvent waits for an Event with reason about the run whose message contains text.
func waitEvent(t *testing.T, w *world.World, plr *tektonv1.PipelineRun, reason, text string) {
	t.Helper()
	world.Eventually(t, 30*time.Second, fmt.Sprintf("a %s Event on %s", reason, plr.Name), func() (bool, error) {
		for _, e := range eventsOf(t, w, plr, reason) {
			if strings.Contains(e.Message, text) {
				return true, nil
			}
		}
		return false, nil
	})
}
