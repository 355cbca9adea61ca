package coexist_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/bridge/changegroupcontroller"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
	"github.com/nudgeflow/nudgeflow/test/konfluxpeers"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// TestISLeak is the world is-leak: Konflux as it ships (integration-service's
// NudgeConfig, integration-service running its immediate edges, build-service
// standing down) and a ChangeGroup that collects operand-a's builds for bundle.
// integration-service creates each nudge run's Secret (its tokens) and ConfigMap
// before the run, with no owner reference; nudgeflow cancels the runs of
// operand-a -> bundle at admission, the group takes those builds, and the bridge
// deletes the cancelled runs' Secret and ConfigMap. Every other Secret stays: the
// tenant's SCM Secret, one named and keyed as integration-service's that no run
// references, the Secrets of integration-service's runs nobody held (operand-b ->
// bundle) and of nudgeflow's own runs (the validated edges). Each (build, edge) is
// delivered exactly once, by a run or by the group. It prints
//
//	konflux-coexist world=is-leak builds=N edges=E nudges=R expected=R duplicates=0 unnudged=0
func TestISLeak(t *testing.T) {
	cw := coexistWorld{
		name:      "is-leak",
		peers:     builds.PeersAuto,
		standIns:  konfluxpeers.Which{BuildService: true, IntegrationService: true, Chains: true, Tekton: true},
		shipped:   true,
		nudgesRef: map[string][]string{"operand-a": {"bundle"}, "operand-b": {"bundle"}},
	}
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)
	stop := startServices(t, w, ns, cw)
	defer stop()

	create := creator(t, w, ns)
	// operand-c is a member of the group that never builds: the group collects
	// and never goes on to open its pull request (this world has no forge).
	for _, name := range []string{"operand-a", "operand-b", "operand-c", "bundle", "tests"} {
		c := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: name, Application: "app", ContainerImage: "quay.io/org/" + name, BuildNudgesRef: cw.nudgesRef[name]}}
		if !strings.HasPrefix(name, "operand") {
			c.Spec.Source.GitSource = &mirrorv1alpha1.GitSource{URL: "https://github.com/" + ns + "/" + name, Revision: "main"}
		}
		create(c)
	}
	imageCredentials(t, w, ns)
	scm := scmCredentials()
	create(scm)
	// Shaped as integration-service's, referenced by no run: not the bridge's to delete.
	decoy := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "renovate-pipeline-" + strings.Repeat("e", 12)},
		Type: corev1.SecretTypeOpaque, StringData: map[string]string{"token_0": "t", "image_0": "i"}}
	create(decoy)
	nc := &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: nudgeconfigs.Name, Namespace: ns}, Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: edges}}
	shipped, err := nudgeconfigs.ToShipped(nc)
	require.NoError(t, err)
	create(shipped)
	waitNudgedBy(t, w, ns)
	const group = "hold-a"
	create(&appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: group},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle",
			NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "operand-a"}, {Name: "operand-c"}}}})

	var all []*tektonv1.PipelineRun
	for n := 1; n <= buildsPerSource; n++ {
		for _, s := range sources {
			all = append(all, pushBuild(t, w, ns, s, n))
			snapshots(t, w, ns, s, n)
		}
		settle(t, w, ns, cw, all, nil)
	}

	// Every run nudgeflow cancelled is settled and its objects are gone.
	var held, others []tektonv1.PipelineRun
	world.Eventually(t, waitFor, "the held runs settled and their Secret and ConfigMap deleted", func() (bool, error) {
		held, others = nil, nil
		for _, r := range nudgeRuns(t, w, ns) {
			if !konflux.HeldAtAdmission(r.Annotations) {
				others = append(others, r)
				continue
			}
			held = append(held, r)
			if r.Annotations[konflux.AnnotationHeldSettled] == "" {
				return false, fmt.Errorf("held run %s not settled yet", r.Name)
			}
			for _, obj := range []ctrlclient.Object{&corev1.Secret{}, &corev1.ConfigMap{}} {
				err := w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: r.Name}, obj)
				if err == nil {
					return false, fmt.Errorf("%T %s of the cancelled run is still there", obj, r.Name)
				}
				if !apierrors.IsNotFound(err) {
					return false, err
				}
			}
		}
		if len(held) != buildsPerSource {
			return false, fmt.Errorf("%d held runs", len(held))
		}
		return true, nil
	})
	for _, r := range held {
		require.Equal(t, konfluxpeers.CreatedByIntegrationService, r.Labels[konfluxpeers.ManagedByLabel], "held: integration-service's run %s", r.Name)
		require.Equal(t, "operand-a", r.Annotations[konflux.AnnotationNudging])
		secrets, configMaps, ok := changegroupcontroller.ISRunObjects(&r)
		require.True(t, ok, "run %s references integration-service's objects", r.Name)
		require.Equal(t, []string{r.Name}, secrets)
		require.Equal(t, []string{r.Name}, configMaps)
		world.Eventually(t, waitFor, "Event "+changegroupcontroller.ReasonRunObjectsDeleted+" on "+r.Name, func() (bool, error) {
			return hasEvent(t, w, ns, r.Name, changegroupcontroller.ReasonRunObjectsDeleted), nil
		})
	}

	// Every other Secret is intact: the tenant's, the decoy, and every Secret a run
	// nobody held references.
	intact := []string{scm.Name, decoy.Name}
	for _, r := range others {
		for _, task := range r.Spec.PipelineSpec.Tasks {
			for _, step := range task.TaskSpec.Steps {
				for _, from := range step.EnvFrom {
					if from.SecretRef != nil {
						intact = append(intact, from.SecretRef.Name)
					}
				}
			}
		}
	}
	require.Len(t, intact, 2+len(others), "each run nobody held references its Secret: %v", intact)
	for _, name := range intact {
		require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{}), "Secret %s intact", name)
	}

	t.Logf("is-leak: cancelled_runs=%d run_objects_deleted=%d secrets_intact=%d", len(held), 2*len(held), len(intact))

	// The group has operand-a's newest build.
	world.Eventually(t, waitFor, "ChangeGroup "+group+" collected operand-a's newest build", func() (bool, error) {
		var cg appstudiov1alpha1.ChangeGroup
		if err := w.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: group}, &cg); err != nil {
			return false, err
		}
		for _, c := range cg.Status.Components {
			if c.Name == "operand-a" {
				if c.NewBuild != digestOf("operand-a", buildsPerSource) {
					return false, fmt.Errorf("newBuild %q", c.NewBuild)
				}
				return true, nil
			}
		}
		return false, fmt.Errorf("no status of operand-a yet (phase %q)", cg.Status.Phase)
	})

	got, by, cancelled := deliveries(append(append([]tektonv1.PipelineRun{}, held...), others...))
	require.Equal(t, len(held), cancelled)
	for key, who := range by {
		if strings.Contains(key, "operand-a->bundle") {
			require.Equal(t, builds.Runner("ChangeGroup "+group), who, "%s collected by the group", key)
		}
	}
	report(t, cw, all, nil, got)
}

// hasEvent: an Event of reason on the object named name.
func hasEvent(t *testing.T, w *world.World, ns, name, reason string) bool {
	t.Helper()
	var list corev1.EventList
	require.NoError(t, w.Kube.List(context.Background(), &list, ctrlclient.InNamespace(ns)))
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			return true
		}
	}
	return false
}
