package debugcmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	"github.com/nudgeflow/nudgeflow/bridge/diagnose"
	"github.com/nudgeflow/nudgeflow/cmd/nudgeflow/cli"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// bulkBuilds is how many routed builds surround the ones the answers name; with
// chunk 50 the scan takes many pages.
const (
	bulkBuilds = 400
	chunk      = "50"
	// padding goes into every build's spec: a full list would carry it, a
	// metadata list must not.
	padding = 2048
)

// nudgeflow runs the CLI in this process with args and returns its stdout.
func nudgeflow(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	err := execute(&out, &errOut, args...)
	require.NoError(t, err, "nudgeflow %s\n%s%s", strings.Join(args, " "), out.String(), errOut.String())
	return out.String()
}

// execute runs the CLI in this process.
func execute(out, errOut *bytes.Buffer, args ...string) error {
	root := cli.NewRoot()
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(errOut)
	return root.ExecuteContext(context.Background())
}

// build is a push build PipelineRun of component in the old (appstudio) keys, or
// the new (konflux-ci.dev) keys only, with a spec that weighs padding bytes.
func build(ns, name, component string, newModel bool) *tektonv1.PipelineRun {
	labels := map[string]string{konflux.AnnotationEventType: "push"}
	if newModel {
		labels[konflux.ComponentKey.New], labels[konflux.PipelineTypeKey.New] = component, konflux.PipelineTypeBuild
	} else {
		labels[konflux.ComponentKey.Old], labels[konflux.PipelineTypeKey.Old] = component, konflux.PipelineTypeBuild
	}
	return &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels,
			Annotations: map[string]string{konflux.AnnotationEventType: "push"}},
		Spec: tektonv1.PipelineRunSpec{
			PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"},
			Params:      tektonv1.Params{{Name: "padding", Value: *tektonv1.NewStructuredValues(strings.Repeat("x", padding))}},
		},
	}
}

func held(plr *tektonv1.PipelineRun) *tektonv1.PipelineRun {
	plr.Finalizers = append(plr.Finalizers, konflux.FinalizerBuildRouting)
	return plr
}

func routed(plr *tektonv1.PipelineRun, value string) *tektonv1.PipelineRun {
	plr.Annotations[konflux.AnnotationNudgeRouted] = value
	return plr
}

// nextSecond waits until the wall clock is in a later second than t: creation
// times have one-second resolution, and the oldest build must be strictly oldest.
func nextSecond(t *testing.T, after time.Time) {
	t.Helper()
	world.Eventually(t, 3*time.Second, "the clock to pass a second", func() (bool, error) {
		return time.Now().Truncate(time.Second).After(after.Truncate(time.Second)), nil
	})
}

func create(t *testing.T, w *world.World, objs ...ctrlclient.Object) {
	t.Helper()
	for _, o := range objs {
		require.NoError(t, w.Kube.Create(context.Background(), o), "creating %s", o.GetName())
	}
}

// assertMetadataOnly checks each PipelineRun request: a GET or LIST that asked
// for PartialObjectMetadata(List) and got it (the kind in the body the API server
// sent, not the client's wish: the client would accept full objects as a
// fallback), and for lists a label selector and a page limit. It returns the
// bytes the PipelineRun responses carried.
func assertMetadataOnly(t *testing.T, reqs []request) int64 {
	t.Helper()
	plrs := pipelineRunRequests(reqs)
	require.NotEmpty(t, plrs, "the command read no PipelineRun")
	var total int64
	for _, r := range plrs {
		require.Equal(t, "GET", r.Method, "%s %s", r.Method, r.Path)
		if strings.HasSuffix(r.Path, "/pipelineruns") {
			require.Contains(t, r.Accept, "as=PartialObjectMetadataList", "list %s asked for %q", r.Path, r.Accept)
			require.Equal(t, "PartialObjectMetadataList", r.Kind, "list %s answered %q", r.Path, r.ContentType)
			require.NotEmpty(t, r.Query.Get("labelSelector"), "list %s without a label selector", r.Path)
			require.NotEmpty(t, r.Query.Get("limit"), "list %s without a page limit", r.Path)
		} else {
			require.Contains(t, r.Accept, "as=PartialObjectMetadata", "get %s asked for %q", r.Path, r.Accept)
			require.Equal(t, "PartialObjectMetadata", r.Kind, "get %s answered %q", r.Path, r.ContentType)
		}
		total += r.Bytes
	}
	return total
}

// TestDebugUnrouted: among 400 routed builds and a few others, the oldest held
// builds come first (in both key forms, across namespaces), unheld push builds
// only on request; read page by page as metadata, in fewer bytes than the
// builds' specs alone.
func TestDebugUnrouted(t *testing.T) {
	ctx := context.Background()
	w := world.Get(t)
	rec := newRecorder(t, w)
	cfg := rec.kubeconfig(t)
	bulk, other := w.Namespace(t), w.Namespace(t)

	// The oldest: held, then deleted by the pruner (the finalizer keeps it).
	oldest := held(build(bulk, "api-oldest", "api", false))
	oldest.Labels[konflux.LabelPaCState] = "completed"
	create(t, w, oldest)
	require.NoError(t, w.Kube.Delete(ctx, oldest))
	nextSecond(t, time.Now())
	// A new-model build (konflux-ci.dev keys only): the other selector finds it.
	newModel := held(build(bulk, "web-new-model", "web", true))
	create(t, w, newModel)
	nextSecond(t, time.Now())
	// Routed and still held: only its release is left, but the pruner still waits.
	create(t, w, routed(held(build(other, "db-routed-held", "db", false)), "svc"))
	// Push builds nobody held or routed (no edges, or the hold skipped).
	create(t, w, build(other, "cli-unheld", "cli", false))
	// Never nudgeflow's: a pull-request build, a merge-queue build.
	pr := build(other, "api-pr", "api", false)
	pr.Labels[konflux.AnnotationEventType], pr.Annotations[konflux.AnnotationEventType] = "pull_request", "pull_request"
	mq := build(other, "api-mq", "api", false)
	mq.Annotations[konflux.AnnotationSourceBranch] = "refs/heads/gh-readonly-queue/main/pr-7-abc"
	create(t, w, pr, mq)
	for i := range bulkBuilds {
		create(t, w, routed(build(bulk, fmt.Sprintf("svc-%03d", i), "svc", false), "bundle"))
	}
	rec.take()

	var rep diagnose.UnroutedReport
	require.NoError(t, json.Unmarshal([]byte(nudgeflow(t, "debug", "unrouted", "--kubeconfig", cfg, "-A", "--chunk-size", chunk, "-o", "json")), &rep))
	require.Equal(t, 3, rep.Held, "held builds")
	require.Equal(t, 0, rep.Unheld, "unheld builds are counted only with --include-unheld")
	require.GreaterOrEqual(t, rep.Scanned, bulkBuilds+6)
	require.Len(t, rep.Oldest, 3)
	got := []string{}
	for _, b := range rep.Oldest {
		got = append(got, b.Namespace+"/"+b.Name)
	}
	require.Equal(t, []string{bulk + "/api-oldest", bulk + "/web-new-model", other + "/db-routed-held"}, got)
	require.True(t, rep.Oldest[0].Deleting, "the pruner's delete shows")
	require.Equal(t, "completed", rep.Oldest[0].PaCState)
	require.Equal(t, "web", rep.Oldest[1].Component, "the new-model component key is read")
	require.Equal(t, "svc", rep.Oldest[2].Routed)

	reqs := rec.take()
	read := assertMetadataOnly(t, reqs)
	pages := 0
	for _, r := range pipelineRunRequests(reqs) {
		if r.Query.Get("continue") != "" {
			pages++
		}
	}
	require.GreaterOrEqual(t, pages, bulkBuilds/50-1, "the scan pages with continue tokens")
	// The specs alone of the builds scanned weigh more than everything read.
	require.Less(t, read, int64(rep.Scanned)*padding, "read %d bytes for %d builds", read, rep.Scanned)
	// What kubectl get -o json would have read of the same builds, for the log.
	var full int64
	for _, ns := range []string{bulk, other} {
		var list tektonv1.PipelineRunList
		require.NoError(t, w.Kube.List(ctx, &list, ctrlclient.InNamespace(ns)))
		raw, err := json.Marshal(list.Items)
		require.NoError(t, err)
		full += int64(len(raw))
	}
	t.Logf("debug-unrouted builds=%d requests=%d continued=%d metadata_bytes=%d (%d per build) full_json_bytes=%d",
		rep.Scanned, len(pipelineRunRequests(reqs)), pages, read, read/int64(rep.Scanned), full)

	// One namespace, unheld push builds too, and the text an operator reads.
	text := nudgeflow(t, "debug", "unrouted", "--kubeconfig", cfg, "-n", other, "--include-unheld")
	require.Contains(t, text, "held by nudgeflow: 1; push builds neither held nor routed: 1")
	require.Contains(t, text, other+"/db-routed-held")
	require.Contains(t, text, other+"/cli-unheld")
	require.NotContains(t, text, "api-pr")
	require.NotContains(t, text, "api-mq")
	require.Contains(t, text, "why one waits: nudgeflow debug build "+other+"/")
	assertMetadataOnly(t, rec.take())

	// --since drops what was created before it.
	since := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	require.Contains(t, nudgeflow(t, "debug", "unrouted", "--kubeconfig", cfg, "-n", other, "--since", since), "no unrouted build")
}

// TestDebugOverdue: of groups past their timeout, only those still collecting
// (not Ready, not final) are overdue, the most overdue first, with the members
// they wait for.
func TestDebugOverdue(t *testing.T) {
	ctx := context.Background()
	w := world.Get(t)
	rec := newRecorder(t, w)
	cfg := rec.kubeconfig(t)
	ns := w.Namespace(t)
	group := func(name, timeout string, members ...string) *appstudiov1alpha1.ChangeGroup {
		d, err := time.ParseDuration(timeout)
		require.NoError(t, err)
		cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", Timeout: &metav1.Duration{Duration: d}}}
		for _, m := range members {
			cg.Spec.NudgingComponents = append(cg.Spec.NudgingComponents, appstudiov1alpha1.NudgingComponentRef{Name: m})
		}
		create(t, w, cg)
		return cg
	}
	setStatus := func(cg *appstudiov1alpha1.ChangeGroup, phase appstudiov1alpha1.ChangeGroupPhase, comps ...appstudiov1alpha1.ComponentStatus) {
		require.NoError(t, world.SetStatus(ctx, w.Kube, cg, func() {
			cg.Status.Phase, cg.Status.Components, cg.Status.Ready = phase, comps, "1/2"
			cg.Status.WorkflowID = "changegroup/" + ns + "/" + cg.Name + "/" + string(cg.UID)
		}))
	}
	// No status yet (its workflow never wrote one), then a Waiting group: both overdue.
	group("no-status", "3s", "api", "web")
	late := group("late", "1s", "api", "web")
	setStatus(late, appstudiov1alpha1.PhaseWaiting,
		appstudiov1alpha1.ComponentStatus{Name: "api", State: appstudiov1alpha1.ComponentReady},
		appstudiov1alpha1.ComponentStatus{Name: "web", State: appstudiov1alpha1.ComponentWaiting})
	// Past the timeout too, but never overdue: Ready follows its PR; Completed is over.
	setStatus(group("ready", "1s", "api"), appstudiov1alpha1.PhaseReady)
	setStatus(group("merged", "1s", "api"), appstudiov1alpha1.PhaseCompleted)
	// Within its timeout.
	setStatus(group("fresh", "1h", "api"), appstudiov1alpha1.PhaseWaiting)
	rec.take()

	var rep diagnose.OverdueReport
	world.Eventually(t, 10*time.Second, "both collecting groups past their timeout", func() (bool, error) {
		rep = diagnose.OverdueReport{}
		err := json.Unmarshal([]byte(nudgeflow(t, "debug", "overdue", "--kubeconfig", cfg, "-n", ns, "-o", "json", "--chunk-size", "2")), &rep)
		return len(rep.Overdue) == 2, err
	})
	require.Equal(t, 5, rep.Scanned)
	require.Equal(t, 4, rep.Open, "every group but the Completed one is open")
	require.Equal(t, "late", rep.Overdue[0].Name, "the most overdue first")
	require.Equal(t, "Waiting", rep.Overdue[0].Phase)
	require.Equal(t, []string{"web"}, rep.Overdue[0].Waiting)
	require.Equal(t, "no-status", rep.Overdue[1].Name)
	require.Equal(t, "", rep.Overdue[1].Phase)
	require.Equal(t, []string{"api", "web"}, rep.Overdue[1].Waiting, "with no status every member is awaited")
	require.Greater(t, rep.Overdue[0].Overdue, rep.Overdue[1].Overdue)
	continued := false
	for _, r := range rec.take() {
		continued = continued || (strings.HasSuffix(r.Path, "/changegroups") && r.Query.Get("continue") != "")
	}
	require.True(t, continued, "ChangeGroups are read page by page")

	text := nudgeflow(t, "debug", "overdue", "--kubeconfig", cfg, "-n", ns)
	require.Contains(t, text, "ChangeGroups read: 5; open: 4; past their timeout: 2 shown")
	require.Contains(t, text, ns+"/late")
	require.Contains(t, text, "nudgeflow changegroup status late -n "+ns)
	require.NotContains(t, text, ns+"/ready")
}

// TestDebugBuild: why a routed build waits, edge by edge (a ChangeGroup's other
// member, a validated edge's Snapshot, a Renovate run queued behind another), and
// why a held one does (integration-service's verdict); PipelineRuns read as
// metadata.
func TestDebugBuild(t *testing.T) {
	w := world.Get(t)
	rec := newRecorder(t, w)
	cfg := rec.kubeconfig(t)
	ns, shipped := w.Namespace(t), w.Namespace(t)

	create(t, w, &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: konfluxv1alpha1.NudgeConfigName},
		Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: []konfluxv1alpha1.NudgeRelationship{
			{From: "api", To: "bundle"},
			{From: "api", To: "lib", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "ui-group"},
			{From: "api", To: "svc"},
		}}})
	cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release-1"},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle",
			NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "api"}, {Name: "web"}}}}
	create(t, w, cg)
	require.NoError(t, world.SetStatus(context.Background(), w.Kube, cg, func() {
		cg.Status.Phase, cg.Status.Ready = appstudiov1alpha1.PhaseWaiting, "1/2"
		cg.Status.Components = []appstudiov1alpha1.ComponentStatus{
			// The build came to the group in build-service's nudge run, held at admission.
			{Name: "api", State: appstudiov1alpha1.ComponentReady, BuildPipelineRun: "api-nudge-bundle", NewBuild: "sha256:aaa"},
			{Name: "web", State: appstudiov1alpha1.ComponentWaiting},
		}
	}))
	b := routed(build(ns, "api-build", "api", false), "bundle,lib,svc")
	create(t, w, b)
	// build-service's nudge of bundle, cancelled at admission for the group.
	bs := nudgeRun(ns, "api-nudge-bundle", "bundle", "api-build")
	bs.Annotations[konflux.AnnotationHeldBy] = "bundle=release-1"
	// nudgeflow's Renovate run for svc, queued behind another run on its branch.
	queued := nudgeRun(ns, "renovate-svc-2", "svc", "api-build")
	queued.Labels[renovate.LabelManagedBy] = renovate.ManagedByNudgeflow
	queued.Annotations[renovaterun.AnnotationQueuedForBranch] = "renovate-svc-1"
	// Another build's run: not this build's.
	create(t, w, bs, queued, nudgeRun(ns, "other-nudge", "svc", "api-older"))

	// integration-service runs the shipped NudgeConfig's immediate edges.
	create(t, w, &mirrorv1beta2.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: shipped, Name: konfluxv1alpha1.NudgeConfigName},
		Spec: mirrorv1beta2.NudgeConfigSpec{Nudges: []mirrorv1beta2.NudgeRelationship{{From: "web", To: "app"}}}})
	waiting := held(build(shipped, "web-build", "web", false))
	waiting.Labels[konflux.LabelPaCState] = "completed"
	create(t, w, waiting)
	rec.take()

	var rep diagnose.BuildReport
	require.NoError(t, json.Unmarshal([]byte(nudgeflow(t, "debug", "build", ns+"/api-build", "--kubeconfig", cfg, "--nudging-peers", "none", "-o", "json")), &rep))
	require.True(t, rep.RoutedSet)
	require.Contains(t, rep.Summary, "routed and released")
	require.Len(t, rep.Edges, 3)
	edges := map[string]diagnose.EdgeReport{}
	for _, e := range rep.Edges {
		edges[e.Target] = e
	}
	bundle := edges["bundle"]
	require.NotNil(t, bundle.Group)
	require.Equal(t, "release-1", bundle.Group.Name)
	require.True(t, bundle.Group.HasBuild)
	require.Equal(t, "the group's other members: web", bundle.WaitingFor)
	require.Contains(t, bundle.State, "holds this build")
	require.Contains(t, bundle.State, "nudge run api-nudge-bundle held at admission (bundle=release-1)")
	lib := edges["lib"]
	require.Equal(t, "validated-nudge/"+ns+"/api/lib", lib.WorkflowID)
	require.Contains(t, lib.WaitingFor, "ComponentGroup ui-group's Snapshot")
	svc := edges["svc"]
	require.Equal(t, "nudge/"+ns+"/"+getUID(t, w, b)+"/svc", svc.WorkflowID)
	require.Equal(t, []string{"renovate-svc-2"}, svc.Runs)
	require.Contains(t, svc.WaitingFor, "Renovate run renovate-svc-1 on the same branch")
	require.Len(t, rep.NudgeRuns, 2, "the other build's run is not this build's")
	assertMetadataOnly(t, rec.take())
	text := nudgeflow(t, "debug", "build", ns+"/api-build", "--kubeconfig", cfg, "--nudging-peers", "none")
	t.Logf("nudgeflow debug build %s/api-build:\n%s", ns, text)
	require.Contains(t, text, "edge api->bundle (immediate, from NudgeConfig, run by nudgeflow)\n  state:       ChangeGroup release-1 (Waiting, ready 1/2) holds this build")
	require.Contains(t, text, "  waiting for: the group's other members: web\n")

	text = nudgeflow(t, "debug", "build", "web-build", "-n", shipped, "--kubeconfig", cfg, "--nudging-peers", "integration-service")
	require.Contains(t, text, "held, not acknowledged yet: once the build ended, the bridge routes its edges and releases it when integration-service's verdict is in (edges web->app) (Pipelines as Code says completed)")
	require.Contains(t, text, "edge web->app (immediate, from NudgeConfig.appstudio.redhat.com, run by integration-service)")
	require.Contains(t, text, "waiting for: integration-service's verdict")
	t.Logf("nudgeflow debug build %s/web-build:\n%s", shipped, text)
	assertMetadataOnly(t, rec.take())
}

func nudgeRun(ns, name, target, build string) *tektonv1.PipelineRun {
	return &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue},
		Annotations: map[string]string{konflux.AnnotationNudged: target, konflux.AnnotationNudgingPLR: build,
			konflux.AnnotationNudging: "api"}},
		Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "renovate"}}}
}

func getUID(t *testing.T, w *world.World, plr *tektonv1.PipelineRun) string {
	t.Helper()
	var got tektonv1.PipelineRun
	require.NoError(t, w.Kube.Get(context.Background(), ctrlclient.ObjectKeyFromObject(plr), &got))
	return string(got.UID)
}

// TestDebugUnheldNudges: of the nudge runs since a time, those nudgeflow neither
// held nor launched are listed, with the open group each went around.
func TestDebugUnheldNudges(t *testing.T) {
	w := world.Get(t)
	rec := newRecorder(t, w)
	cfg := rec.kubeconfig(t)
	ns := w.Namespace(t)
	create(t, w, &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bundle-group"},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle",
			NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "api"}}}})
	// The webhook was away: build-service's run for bundle and lib went through.
	create(t, w, nudgeRun(ns, "api-nudge-1", "bundle,lib", "api-build-1"))
	// Held at admission (the webhook was there), and nudgeflow's own run: not listed.
	heldRun := nudgeRun(ns, "api-nudge-2", "bundle", "api-build-2")
	heldRun.Annotations[konflux.AnnotationHeldBy] = "bundle=bundle-group"
	ours := nudgeRun(ns, "renovate-lib", "lib", "api-build-2")
	ours.Labels[renovate.LabelManagedBy] = renovate.ManagedByNudgeflow
	create(t, w, heldRun, ours)
	rec.take()

	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	var rep diagnose.UnheldNudgesReport
	require.NoError(t, json.Unmarshal([]byte(nudgeflow(t, "debug", "unheld-nudges", "--kubeconfig", cfg, "-n", ns, "--since", since, "-o", "json")), &rep))
	require.Equal(t, 3, rep.Scanned)
	require.Len(t, rep.Unheld, 1)
	require.Equal(t, "api-nudge-1", rep.Unheld[0].Name)
	require.Equal(t, []string{"bundle", "lib"}, rep.Unheld[0].Targets)
	require.Equal(t, []string{"bundle=bundle-group"}, rep.Unheld[0].OutsideGroups)
	assertMetadataOnly(t, rec.take())

	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	require.Contains(t, nudgeflow(t, "debug", "unheld-nudges", "--kubeconfig", cfg, "-n", ns, "--since", later), "not held by nudgeflow since "+later+": 0")
}

// TestDebugAsReadOnlyOperator runs every debug command as a user granted only
// get and list on PipelineRuns, ChangeGroups, NudgeConfigs and Components, the
// permissions RUNBOOK.md names: nothing more is needed.
func TestDebugAsReadOnlyOperator(t *testing.T) {
	w := world.Get(t)
	ns := w.Namespace(t)
	user := "debug-operator-" + ns
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"tekton.dev"}, Resources: []string{"pipelineruns"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"appstudio.redhat.com"}, Resources: []string{"changegroups", "components", "nudgeconfigs"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"konflux-ci.dev"}, Resources: []string{"nudgeconfigs"}, Verbs: []string{"get", "list"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	u, err := w.ControlPlane.Env.AddUser(envtest.User{Name: user}, nil)
	require.NoError(t, err)
	raw, err := u.KubeConfig()
	require.NoError(t, err)
	cfg := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(cfg, raw, 0o600))
	// Unbound, the user reads nothing: the role below is what lets it.
	_, err = run(cfg, "debug", "unrouted", "-n", ns)
	require.ErrorContains(t, err, "forbidden")
	create(t, w, role, binding)

	create(t, w, &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: konfluxv1alpha1.NudgeConfigName},
		Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: []konfluxv1alpha1.NudgeRelationship{{From: "api", To: "bundle"}}}})
	create(t, w, held(build(ns, "api-build", "api", false)), nudgeRun(ns, "api-nudge", "bundle", "api-build"))
	// The role takes effect when the authorizer's cache has it.
	world.Eventually(t, 10*time.Second, "the operator's role to apply", func() (bool, error) {
		out, err := run(cfg, "debug", "unrouted", "-n", ns, "-o", "json")
		return err == nil && strings.Contains(out, "api-build"), err
	})
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for _, args := range [][]string{
		{"debug", "unrouted", "-A", "--include-unheld"},
		{"debug", "overdue", "-A"},
		{"debug", "build", ns + "/api-build", "--nudging-peers", "auto"},
		{"debug", "unheld-nudges", "-A", "--since", since},
	} {
		_, err := run(cfg, args...)
		require.NoError(t, err, "nudgeflow %s as a read-only operator", strings.Join(args, " "))
	}
}

// run runs the CLI in this process with a kubeconfig and returns its output and error.
func run(kubeconfig string, args ...string) (string, error) {
	var out bytes.Buffer
	err := execute(&out, &out, append(args, "--kubeconfig", kubeconfig)...)
	return out.String(), err
}
