package coexist_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	newmodel "github.com/nudgeflow/nudgeflow/api/mirror/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
	"github.com/nudgeflow/nudgeflow/test/konfluxpeers"
	"github.com/nudgeflow/nudgeflow/test/world"
	"github.com/nudgeflow/nudgeflow/workflows/validatednudge"
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
	name:     "new-model-keys",
	peers:    builds.PeersAuto,
	standIns: konfluxpeers.Which{BuildService: true, IntegrationService: true, Tekton: true},
	shipped:  true,
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

	create := func(obj ctrlclient.Object) {
		t.Helper()
		obj.SetNamespace(ns)
		require.NoError(t, w.Kube.Create(ctx, obj))
	}
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
	create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "scm-github", Labels: map[string]string{
			credentials.LabelCredentials: credentials.LabelCredentialsSCM, credentials.LabelSCMHost: "github.com"}},
		Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{corev1.BasicAuthUsernameKey: []byte("konflux-bot"), corev1.BasicAuthPasswordKey: []byte("token")},
	})
	shipped, err := nudgeconfigs.ToShipped(&konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: nudgeconfigs.Name, Namespace: ns},
		Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: edges}})
	require.NoError(t, err)
	create(shipped)
	// The bridge has read the NudgeConfig (and says who runs its edges for
	// old-model builds) before the first build.
	world.Eventually(t, waitFor, "the NudgedBy Event", func() (bool, error) {
		var list corev1.EventList
		if err := w.Kube.List(ctx, &list, ctrlclient.InNamespace(ns)); err != nil {
			return false, err
		}
		return slices.ContainsFunc(list.Items, func(e corev1.Event) bool { return e.Reason == "NudgedBy" }), nil
	})

	var all []*tektonv1.PipelineRun
	for n := 1; n <= buildsPerSource; n++ {
		for _, s := range sources {
			all = append(all, newModelBuild(t, w, ns, s, n))
			snapshots(t, w, ns, s, n)
		}
		settleNewModel(t, w, ns, cw, all)
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

	// Nudges by any writer, per (build, edge).
	got := map[string]int{}
	by := map[string]builds.Runner{}
	for _, r := range nudgeRuns(t, w, ns) {
		for _, target := range konfluxpeers.Targets(&r) {
			key := konflux.NudgingPipelineKey.Get(r.Annotations) + " " + konflux.NudgingKey.Get(r.Annotations) + "->" + target
			got[key]++
			by[key] = runnerOf(&r)
			if runnerOf(&r) == builds.RunnerNudgeflow {
				// nudgeflow's own run carries both forms of Konflux's keys.
				for _, k := range []konflux.Key{konflux.NudgeTypeKey, konflux.NudgingKey, konflux.NudgedKey, konflux.NudgingPipelineKey} {
					src := r.Annotations
					if k == konflux.NudgeTypeKey {
						src = r.Labels
					}
					require.Equal(t, src[k.Old], src[k.New], "run %s writes %s in both forms", r.Name, k.New)
				}
			}
		}
	}
	want, unnudged, duplicates := 0, 0, 0
	for _, b := range all {
		for _, e := range edges {
			if e.From != konflux.ComponentOf(b.Labels) {
				continue
			}
			want++
			key := b.Name + " " + e.From + "->" + e.To
			switch n := got[key]; {
			case n == 0:
				unnudged++
			case n > 1:
				duplicates += n - 1
			}
			require.Equal(t, cw.runners[e.From+"->"+e.To], by[key], "who nudged %s", key)
		}
	}
	nudges := 0
	for _, n := range got {
		nudges += n
	}
	fmt.Printf("konflux-coexist world=%s builds=%d edges=%d nudges=%d expected=%d duplicates=%d unnudged=%d\n",
		cw.name, len(all), len(edges), nudges, want, duplicates, unnudged)
	require.Zero(t, duplicates, "no build nudged twice along an edge")
	require.Zero(t, unnudged, "every build nudged along every edge")
	require.Equal(t, want, nudges)
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

// settleNewModel waits until every build is routed and released, every owed nudge
// run exists and ended, and every validated edge is idle with a nudge per build.
func settleNewModel(t *testing.T, w *world.World, ns string, cw coexistWorld, all []*tektonv1.PipelineRun) {
	t.Helper()
	ctx := context.Background()
	owed := len(all) * 2
	world.Eventually(t, waitFor, fmt.Sprintf("world %s: %d builds settled, %d nudges ended", cw.name, len(all), owed), func() (bool, error) {
		for _, b := range all {
			var got tektonv1.PipelineRun
			if err := w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(b), &got); err != nil {
				return false, err
			}
			if !builds.Settled(&got) {
				return false, fmt.Errorf("build %s not routed by nudgeflow yet", b.Name)
			}
		}
		targets := 0
		for _, r := range nudgeRuns(t, w, ns) {
			if !r.IsDone() {
				return false, fmt.Errorf("run %s has not ended", r.Name)
			}
			targets += len(konfluxpeers.Targets(&r))
		}
		if targets < owed {
			return false, fmt.Errorf("%d of %d nudges so far", targets, owed)
		}
		for _, s := range sources {
			var st validatednudge.State
			v, err := w.TemporalClient.QueryWorkflow(ctx, validatednudge.WorkflowID(ns, s, "tests"), "", validatednudge.QueryState)
			if err != nil {
				return false, err
			}
			if err := v.Get(&st); err != nil {
				return false, err
			}
			if st.Pending != nil || st.Ready != nil || st.Running != nil || len(st.Nudges) < len(all)/len(sources) {
				return false, fmt.Errorf("validated edge %s -> tests: %d nudges, pending %v", s, len(st.Nudges), st.Pending != nil)
			}
		}
		return true, nil
	})
}
