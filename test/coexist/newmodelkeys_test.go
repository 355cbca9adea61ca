package coexist_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	newmodel "github.com/nudgeflow/nudgeflow/api/mirror/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
	"github.com/nudgeflow/nudgeflow/test/konfluxpeers"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// newModelKeysWorld is Konflux as it ships (integration-service's NudgeConfig,
// build-service and integration-service installed) with the sources moved to the
// new component model (ADR 56): operand-a and operand-b are konflux-ci.dev
// Components whose builds carry only ADR 69's new keys, as build-service writes
// them (BS:internal/controller/component_build_controller_v2.go:54-65 at ccde63a).
// Neither peer nudges such a build (both select builds by the appstudio keys), so
// nudgeflow runs every edge of it, the immediate ones of integration-service's
// NudgeConfig included. Targets: bundle exists only as a konflux-ci.dev Component
// (target resolution reads its spec.source.url and first version's branch); tests
// exists as both kinds under one name, as during Konflux's dual-write phase
// (resolved to the appstudio one).
var newModelKeysWorld = coexistWorld{
	name:       "new-model-keys",
	peers:      builds.PeersAuto,
	standIns:   konfluxpeers.Which{BuildService: true, IntegrationService: true, Tekton: true},
	shipped:    true,
	peersBlind: true,
	runners: map[string]builds.Runner{"operand-a->bundle": builds.RunnerNudgeflow, "operand-a->tests": builds.RunnerNudgeflow,
		"operand-b->bundle": builds.RunnerNudgeflow, "operand-b->tests": builds.RunnerNudgeflow},
}

// TestNewModelKeys: every build of a new-model Component, labelled only with the
// konflux-ci.dev keys, is held at admission, routed, and nudged exactly once per
// edge, by nudgeflow, whoever else is installed.
func TestNewModelKeys(t *testing.T) {
	cw := newModelKeysWorld
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)
	stop := startServices(t, w, ns, cw)
	defer stop()

	create := creator(t, w, ns)
	repo := func(name string) string { return "https://github.com/" + ns + "/" + name }
	for _, name := range []string{"operand-a", "operand-b", "bundle", "tests"} {
		create(&newmodel.Component{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: newmodel.ComponentSpec{
			Source:         newmodel.ComponentSource{URL: repo(name), Versions: []newmodel.ComponentVersion{{Name: "main", Revision: "main"}}},
			ContainerImage: "quay.io/org/" + name}})
	}
	// tests in both kinds, as Konflux's migration keeps them side by side.
	create(&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "tests"},
		Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "tests", Application: "app", ContainerImage: "quay.io/org/tests",
			Source: mirrorv1alpha1.ComponentSource{GitSource: &mirrorv1alpha1.GitSource{URL: repo("tests"), Revision: "main"}}}})
	create(scmCredentials())
	shipped, err := nudgeconfigs.ToShipped(&konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: nudgeconfigs.Name, Namespace: ns},
		Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: edges}})
	require.NoError(t, err)
	create(shipped)
	waitNudgedBy(t, w, ns)

	var all []*tektonv1.PipelineRun
	for n := 1; n <= buildsPerSource; n++ {
		for _, s := range sources {
			all = append(all, newModelBuild(t, w, ns, s, n))
			snapshots(t, w, ns, s, n)
		}
		settle(t, w, ns, cw, all, nil)
	}

	// Routed by nudgeflow along both edges; seen by neither peer.
	for _, b := range all {
		var got tektonv1.PipelineRun
		require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(b), &got))
		require.Equal(t, "bundle,tests", got.Annotations[konflux.AnnotationNudgeRouted], "build %s routed along both edges", b.Name)
		require.NotContains(t, got.Finalizers, konflux.FinalizerBuildRouting, "build %s released", b.Name)
		require.Empty(t, got.Annotations[konfluxpeers.ISProcessedAnnotation], "integration-service does not see build %s", b.Name)
		require.Empty(t, got.Annotations[konfluxpeers.BSProcessedAnnotation], "build-service does not see build %s", b.Name)
	}

	// Nudges by any writer, per (build, edge); nudgeflow's own runs carry both
	// forms of Konflux's keys.
	runs := nudgeRuns(t, w, ns)
	for _, r := range runs {
		if runnerOf(&r) != builds.RunnerNudgeflow {
			continue
		}
		for _, k := range []konflux.Key{konflux.NudgeTypeKey, konflux.NudgingKey, konflux.NudgedKey, konflux.NudgingPipelineKey} {
			src := r.Annotations
			if k == konflux.NudgeTypeKey {
				src = r.Labels
			}
			require.Equal(t, src[k.Old], src[k.New], "run %s writes %s in both forms", r.Name, k.New)
		}
	}
	got, by, cancelled := deliveries(runs)
	require.Zero(t, cancelled)
	for _, b := range all {
		for _, e := range edges {
			if e.From == konflux.ComponentOf(b.Labels) {
				key := b.Name + " " + e.From + "->" + e.To
				require.Equal(t, cw.runners[e.From+"->"+e.To], by[key], "who nudged %s", key)
			}
		}
	}
	report(t, cw, all, nil, got)
}

// newModelBuild creates the n-th push build of a new-model component as
// build-service's PaC template for konflux-ci.dev Components labels it
// (generatePaCPipelineRunForComponent, BS ccde63a): the new keys only. It must
// come back from the API server held (the hold webhook's finalizer), then
// succeeds.
func newModelBuild(t *testing.T, w *world.World, ns, component string, n int) *tektonv1.PipelineRun {
	t.Helper()
	ctx := context.Background()
	rev := fmt.Sprintf("%040x", n)
	plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("%s-main-on-push-%d", component, n), Namespace: ns,
		Labels: map[string]string{konflux.ComponentKey.New: component, konflux.PipelineTypeKey.New: konflux.PipelineTypeBuild,
			konflux.AnnotationEventType: "push"},
		Annotations: map[string]string{konflux.AnnotationEventType: "push",
			konflux.RepoKey.New:       fmt.Sprintf("https://github.com/org/%s?rev=%s", component, rev),
			konflux.CommitSHAKey.New:  rev,
			konflux.AnnotationVersion: "main"},
	}, Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"}}}
	for _, old := range []string{konflux.LabelComponent, konflux.LabelPipelineType} {
		require.NotContains(t, plr.Labels, old)
	}
	require.NoError(t, w.Kube.Create(ctx, plr))
	require.Contains(t, plr.Finalizers, konflux.FinalizerBuildRouting, "build %s held at admission by its new keys", plr.Name)
	start := time.Date(2026, 11, 1, 10, n, 0, 0, time.UTC)
	require.NoError(t, world.SetStatus(ctx, w.Kube, plr, func() {
		konflux.SucceededBuild{ImageURL: fmt.Sprintf("quay.io/org/%s:rev%d", component, n), Digest: digestOf(component, n),
			Started: start, Completed: start}.WriteStatus(plr)
	}))
	return plr
}
