package plrcache

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/bridge/changegroupcontroller"
	"github.com/nudgeflow/nudgeflow/bridge/prgroups"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// TestStripPipelineRunKeepsWhatTheBridgeReads: the cache transform drops the heavy
// status fields, the spec but spec.status, managedFields and other services'
// bookkeeping keys, and every question the bridge asks of a cached PipelineRun
// gets the same answer as on the full object.
func TestStripPipelineRunKeepsWhatTheBridgeReads(t *testing.T) {
	start, done := metav1.Unix(1000, 0), metav1.Unix(1600, 0)
	full := &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{
			Name: "operand-on-push-1", Namespace: "ns", UID: "uid-1", ResourceVersion: "7",
			CreationTimestamp: metav1.Unix(900, 0), Finalizers: []string{"example.com/keep"},
			Labels: map[string]string{builds.LabelComponent: "operand", builds.LabelPipelineType: builds.PipelineTypeBuild},
			Annotations: map[string]string{
				builds.KeyEventType: "push", builds.AnnotationRepo: "https://github.com/org/operand/tree/abc",
				konflux.AnnotationNudgeFiles: ".*Dockerfile.*", konflux.AnnotationHeldBy: "bundle=g",
				konflux.AnnotationNudging: "operand", konflux.AnnotationNudged: "bundle",
				"pipelinesascode.tekton.dev/sha": "abc", "pipelinesascode.tekton.dev/log-url": "https://console.example.com/abc",
				"results.tekton.dev/record": "ns/results/abc/records/def", "chains.tekton.dev/signed": "true",
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "tekton", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: tektonv1.PipelineRunSpec{
			PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"},
			Params:      tektonv1.Params{{Name: "git-url", Value: *tektonv1.NewStructuredValues("https://github.com/org/operand")}},
			Status:      tektonv1.PipelineRunSpecStatusCancelled,
		},
		Status: tektonv1.PipelineRunStatus{
			Status: duckv1.Status{Conditions: duckv1.Conditions{
				{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: "Succeeded", Message: "Tasks Completed: 19 (Failed: 0, Cancelled 0), Skipped: 2"},
				{Type: "Other", Status: corev1.ConditionTrue},
			}},
			PipelineRunStatusFields: tektonv1.PipelineRunStatusFields{
				StartTime: &start, CompletionTime: &done,
				Results: []tektonv1.PipelineRunResult{
					{Name: konflux.ResultImageURL, Value: *tektonv1.NewStructuredValues("quay.io/org/operand:abc")},
					{Name: konflux.ResultImageDigest, Value: *tektonv1.NewStructuredValues("sha256:0123")},
					{Name: "CHAINS-GIT_URL", Value: *tektonv1.NewStructuredValues("https://github.com/org/operand")},
				},
				PipelineSpec:    &tektonv1.PipelineSpec{Tasks: []tektonv1.PipelineTask{{Name: "build-container"}}},
				ChildReferences: []tektonv1.ChildStatusReference{{Name: "operand-on-push-1-build-container", PipelineTaskName: "build-container"}},
				SkippedTasks:    []tektonv1.SkippedTask{{Name: "sast"}},
				Provenance:      &tektonv1.Provenance{FeatureFlags: nil},
				SpanContext:     map[string]string{"traceparent": "00-abc"},
			},
		},
	}
	want := full.DeepCopy()
	out, err := StripPipelineRun(full.DeepCopy())
	require.NoError(t, err)
	got := out.(*tektonv1.PipelineRun)

	require.Nil(t, got.ManagedFields)
	require.Nil(t, got.Status.PipelineSpec)
	require.Nil(t, got.Status.ChildReferences)
	require.Nil(t, got.Status.SkippedTasks)
	require.Nil(t, got.Status.Provenance)
	require.Nil(t, got.Status.SpanContext)

	want.ManagedFields = nil
	for _, dropped := range []string{"pipelinesascode.tekton.dev/log-url", "results.tekton.dev/record", "chains.tekton.dev/signed"} {
		require.NotContains(t, got.Annotations, dropped)
		delete(want.Annotations, dropped)
	}
	require.Equal(t, want.ObjectMeta, got.ObjectMeta, "metadata but managedFields and other services' bookkeeping is kept (the bridge's own keys, Pipelines as Code's SHA)")
	require.Equal(t, tektonv1.PipelineRunSpec{Status: tektonv1.PipelineRunSpecStatusCancelled}, got.Spec, "of the spec, spec.status alone")
	wantCond := want.Status.Conditions[0]
	wantCond.Message = "" // a build's: Tekton's task count, read by no reader
	require.Equal(t, duckv1.Conditions{wantCond}, got.Status.Conditions, "the Succeeded condition alone")
	require.Equal(t, want.Status.Results[:2], got.Status.Results, "IMAGE_URL and IMAGE_DIGEST alone")
	require.Equal(t, want.Status.StartTime, got.Status.StartTime)
	require.Equal(t, want.Status.CompletionTime, got.Status.CompletionTime)

	// The bridge's own questions answer alike.
	require.Equal(t, builds.IsPushBuild(want), builds.IsPushBuild(got))
	require.True(t, got.IsDone())
	require.Equal(t, renovaterun.StatusOf(want), renovaterun.StatusOf(got))
	u1, d1 := konflux.BuildResults(want)
	u2, d2 := konflux.BuildResults(got)
	require.Equal(t, [2]string{u1, d1}, [2]string{u2, d2})
	require.NotEmpty(t, d2)
	require.Equal(t, changegroupcontroller.ParseHeldBy(want.Annotations[konflux.AnnotationHeldBy]), changegroupcontroller.ParseHeldBy(got.Annotations[konflux.AnnotationHeldBy]))

	// Anything else passes untouched (client-go does not transform tombstones).
	other := "not a PipelineRun"
	same, err := StripPipelineRun(other)
	require.NoError(t, err)
	require.Equal(t, other, same)
}

// keysReadersRead are the label and annotation keys the bridge's readers read on a build
// or nudge PipelineRun, from the readers' own constants (docs-notes/scale.md has the
// readers' table): a reader of a new key adds it here and to
// readKeysOfOthers in cache.go (unless it is nudgeflow's own).
var keysReadersRead = []string{
	// builds.BuildReconciler, IsPushBuild, routing, Renudger
	builds.LabelComponent, builds.LabelPipelineType, builds.KeyEventType, builds.AnnotationRepo,
	konflux.AnnotationNudgeRouted, konflux.AnnotationISNudgeProcessed, konflux.AnnotationNudgeFiles,
	konflux.AnnotationNudgingPLR, konflux.AnnotationNudging, konflux.AnnotationNudged, konflux.AnnotationNudgingImg,
	konflux.AnnotationNudgingSHA,
	// builds.RunReconciler, renovaterun.StatusOf, the branch queue, supersede
	konflux.LabelNudgeType, renovaterun.LabelManagedBy, renovaterun.LabelKueueQueue, konflux.AnnotationWorkflowID,
	renovaterun.AnnotationBranch, renovaterun.AnnotationQueuedForBranch, renovate.AnnotationAttempt,
	renovaterun.AnnotationBuiltAt, renovaterun.AnnotationSupersededBy, konflux.AnnotationNudging,
	konflux.AnnotationNudgingImg, konflux.AnnotationNudgingPLR, konflux.AnnotationNudged,
	konflux.AnnotationNudgingSHA,
	// changegroupcontroller.HeldReconciler, heldOnly
	konflux.AnnotationHeldBy, konflux.AnnotationHeldOutcome, konflux.AnnotationHeldForBatch,
	konflux.AnnotationHeldSettled, konflux.AnnotationCancelReason, konflux.AnnotationRenudge,
	konflux.AnnotationHandedBackBy, konflux.AnnotationWorkflowID,
	// prgroups.BuildReconciler, PushBuildReconciler
	prgroups.KeySourceBranch, prgroups.KeyPullRequest, prgroups.KeyRepoURL, prgroups.KeySHA,
	prgroups.AnnotationPRNumber, prgroups.AnnotationCommitSHA,
	// the new (konflux-ci.dev) forms of Konflux's keys the readers read first (ADR 69)
	konflux.ComponentKey.New, konflux.PipelineTypeKey.New, konflux.NudgeTypeKey.New, konflux.RepoKey.New,
	konflux.NudgeFilesKey.New, konflux.PRNumberKey.New, konflux.CommitSHAKey.New, konflux.NudgedKey.New,
	konflux.NudgingKey.New, konflux.NudgingImageKey.New, konflux.NudgingPipelineKey.New, konflux.NudgingCommitKey.New,
	konflux.ISNudgeProcessedKey.New,
}

// TestStripPipelineRunKeepsEveryKeyAReaderReads: every key a reader reads survives,
// as a label and as an annotation; the keys no reader reads (Tekton's, PaC's
// bookkeeping, build-service's target branch, the application) do not.
func TestStripPipelineRunKeepsEveryKeyAReaderReads(t *testing.T) {
	unread := []string{"tekton.dev/pipeline", "appstudio.openshift.io/application", "build.appstudio.redhat.com/target_branch",
		"pipelinesascode.tekton.dev/on-cel-expression", "pipelinesascode.tekton.dev/log-url", "results.tekton.dev/record",
		"chains.tekton.dev/signed", "kubectl.kubernetes.io/last-applied-configuration"}
	all := map[string]string{}
	for _, k := range append(append([]string{}, keysReadersRead...), unread...) {
		all[k] = "value of " + k
	}
	plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", GenerateName: "r-",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "pipelinesascode.tekton.dev/v1alpha1", Kind: "Repository", Name: "repo", UID: "u"}},
		Labels:          maps.Clone(all), Annotations: maps.Clone(all)}}
	out, err := StripPipelineRun(plr)
	require.NoError(t, err)
	got := out.(*tektonv1.PipelineRun)
	for _, k := range keysReadersRead {
		require.Equal(t, all[k], got.Labels[k], "label %s", k)
		require.Equal(t, all[k], got.Annotations[k], "annotation %s", k)
	}
	for _, k := range unread {
		require.NotContains(t, got.Labels, k)
		require.NotContains(t, got.Annotations, k)
	}
	require.Empty(t, got.GenerateName)
	require.Nil(t, got.OwnerReferences)

	none, err := StripPipelineRun(&tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tekton.dev/pipeline": "p"}}})
	require.NoError(t, err)
	require.NotNil(t, none.(*tektonv1.PipelineRun).Labels, "no key read: an empty map, never nil where the run had one")
	require.Empty(t, none.(*tektonv1.PipelineRun).Labels)
}

// TestStripPipelineRunNudge: a nudge run keeps its Succeeded condition's message
// and its Renovate outcome, so renovaterun.StatusOf reads the same outcome (reason and
// message go to the Nudge workflow); other conditions and results are dropped.
func TestStripPipelineRunNudge(t *testing.T) {
	for _, outcome := range []string{renovaterun.OutcomeOK, renovaterun.OutcomeRegistryAuthFailed} {
		for _, cond := range []apis.Condition{
			{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: "Succeeded", Message: "Tasks Completed: 1 (Failed: 0, Cancelled 0), Skipped: 0"},
			{Type: apis.ConditionSucceeded, Status: corev1.ConditionFalse, Reason: "Failed", Message: "Tasks Completed: 1 (Failed: 1, Cancelled 0), Skipped: 0"},
			{Type: apis.ConditionSucceeded, Status: corev1.ConditionFalse, Reason: tektonv1.PipelineRunReasonCancelled.String(), Message: "cancelled"},
		} {
			full := &tektonv1.PipelineRun{
				ObjectMeta: metav1.ObjectMeta{Name: "renovate-1", Namespace: "ns",
					Labels: map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue, renovaterun.LabelManagedBy: renovaterun.ManagedByNudgeflow},
					Annotations: map[string]string{konflux.AnnotationWorkflowID: "wf", konflux.AnnotationNudgingImg: "quay.io/org/a:1",
						konflux.AnnotationNudging: "a"}},
				Spec: tektonv1.PipelineRunSpec{Status: tektonv1.PipelineRunSpecStatusCancelled},
				Status: tektonv1.PipelineRunStatus{
					Status: duckv1.Status{Conditions: duckv1.Conditions{cond, {Type: "Other", Status: corev1.ConditionTrue}}},
					PipelineRunStatusFields: tektonv1.PipelineRunStatusFields{Results: []tektonv1.PipelineRunResult{
						{Name: "CHAINS-GIT_URL", Value: *tektonv1.NewStructuredValues("https://github.com/org/a")},
						{Name: renovaterun.ResultOutcome, Value: *tektonv1.NewStructuredValues(outcome)},
					}},
				},
			}
			want := renovaterun.StatusOf(full.DeepCopy())
			out, err := StripPipelineRun(full)
			require.NoError(t, err)
			got := out.(*tektonv1.PipelineRun)
			require.Equal(t, want, renovaterun.StatusOf(got))
			require.Equal(t, duckv1.Conditions{cond}, got.Status.Conditions)
			require.Len(t, got.Status.Results, 1)
		}
	}
}

// TestPipelineRunCache runs the bridge's cache against a real API server: it holds
// the build and nudge runs (two informers) and no other run, one informer handler
// hears both kinds, and a finalizer, annotation or spec.status patch computed from
// a stripped cached run leaves the spec the cache dropped whole on the server.
func TestPipelineRunCache(t *testing.T) {
	// A bare envtest (KUBEBUILDER_ASSETS, as make test exports it) with the CRDs:
	// the local stack of the test module is not importable from here.
	env := &envtest.Environment{CRDDirectoryPaths: []string{"../../deploy/crds", "../../test/crds"}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	opts := Options()
	opts.Scheme = kube.NewScheme()
	c, err := New(cfg, opts)
	require.NoError(t, err)
	require.NoError(t, builds.IndexHeldBuilds(c))
	go func() { _ = c.Start(ctx) }()
	kc, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: opts.Scheme, Cache: &ctrlclient.CacheOptions{Reader: c}})
	require.NoError(t, err)
	live, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: opts.Scheme})
	require.NoError(t, err)

	heard := make(chan string, 10)
	inf, err := c.GetInformer(ctx, &tektonv1.PipelineRun{})
	require.NoError(t, err)
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
		heard <- o.(*tektonv1.PipelineRun).Name
	}})
	require.NoError(t, err)
	require.True(t, c.WaitForCacheSync(ctx))

	const ns = "default"
	spec := func() tektonv1.PipelineRunSpec {
		return tektonv1.PipelineRunSpec{
			PipelineRef: &tektonv1.PipelineRef{ResolverRef: tektonv1.ResolverRef{Resolver: "bundles", Params: tektonv1.Params{
				{Name: "bundle", Value: *tektonv1.NewStructuredValues("quay.io/konflux-ci/tekton-catalog/pipeline-docker-build:0.4")}}}},
			Params:          tektonv1.Params{{Name: "git-url", Value: *tektonv1.NewStructuredValues("https://github.com/org/operand")}},
			Workspaces:      []tektonv1.WorkspaceBinding{{Name: "git-auth", Secret: &corev1.SecretVolumeSource{SecretName: "git-auth"}}},
			TaskRunTemplate: tektonv1.PipelineTaskRunTemplate{ServiceAccountName: "build-pipeline-operand"},
		}
	}
	run := func(name string, labels map[string]string) *tektonv1.PipelineRun {
		plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels,
			Annotations: map[string]string{"pipelinesascode.tekton.dev/log-url": "https://console.example.com/" + name}}, Spec: spec()}
		require.NoError(t, live.Create(ctx, plr))
		return plr
	}
	run("operand-on-push-1", map[string]string{builds.LabelPipelineType: builds.PipelineTypeBuild, builds.LabelComponent: "operand"})
	nudge := run("renovate-1", map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue})
	run("app-enterprise-contract-1", map[string]string{builds.LabelPipelineType: "test"}) // an integration test
	run("managed-1", nil)                                                                 // a release pipeline
	// ADR 69: a new-model build and a nudge labelled with the konflux-ci.dev keys
	// only, and a build labelled both ways (cached once).
	run("new-model-on-push-1", map[string]string{konflux.PipelineTypeKey.New: konflux.PipelineTypeBuild, konflux.ComponentKey.New: "operand"})
	run("renovate-new-1", map[string]string{konflux.NudgeTypeKey.New: konflux.NudgeTypeValue})
	run("dual-on-push-1", konflux.PipelineTypeKey.Set(konflux.ComponentKey.Set(nil, "operand"), konflux.PipelineTypeBuild))
	nudge.Spec.PipelineRef, nudge.Spec.PipelineSpec = nil, &tektonv1.PipelineSpec{Tasks: []tektonv1.PipelineTask{{Name: "renovate"}}}
	require.NoError(t, live.Delete(ctx, nudge))
	nudge.ResourceVersion = ""
	require.NoError(t, live.Create(ctx, nudge)) // a nudge embeds its pipeline

	seen := map[string]bool{}
	listsBoth := func() bool {
		var list tektonv1.PipelineRunList
		require.NoError(t, kc.List(ctx, &list, ctrlclient.InNamespace(ns)))
		return len(list.Items) == 5
	}
	require.Eventually(t, listsBoth, 30*time.Second, 50*time.Millisecond, "the cache lists the builds and the nudges, each once")
	for len(heard) > 0 {
		seen[<-heard] = true
	}
	require.True(t, seen["operand-on-push-1"] && seen["renovate-1"] && seen["new-model-on-push-1"] && seen["renovate-new-1"] && seen["dual-on-push-1"],
		"one handler hears all informers: %v", seen)

	// The runs of neither kind are not cached: read through the cache, they are not found.
	var other tektonv1.PipelineRun
	for _, name := range []string{"app-enterprise-contract-1", "managed-1"} {
		require.True(t, apierrors.IsNotFound(kc.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: name}, &other)), name)
		require.False(t, seen[name], name)
	}
	var nudges tektonv1.PipelineRunList
	require.NoError(t, kc.List(ctx, &nudges, ctrlclient.InNamespace(ns), ctrlclient.MatchingLabels{konflux.LabelNudgeType: konflux.NudgeTypeValue}))
	require.Len(t, nudges.Items, 1)
	require.Equal(t, "renovate-1", nudges.Items[0].Name)
	both, err := konflux.ListRuns(ctx, kc, map[konflux.Key]string{konflux.NudgeTypeKey: konflux.NudgeTypeValue}, ctrlclient.InNamespace(ns))
	require.NoError(t, err)
	require.Len(t, both, 2, "ListRuns finds the nudges of either form")
	var newBuild tektonv1.PipelineRun
	require.NoError(t, kc.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "new-model-on-push-1"}, &newBuild))
	require.Equal(t, "operand", konflux.ComponentOf(newBuild.Labels), "the stripped new-model build keeps its new keys")

	// A finalizer and an annotation patched from the stripped cached build.
	var build tektonv1.PipelineRun
	require.NoError(t, kc.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "operand-on-push-1"}, &build))
	require.Nil(t, build.Spec.Params, "the cached build is stripped")
	require.NotContains(t, build.Annotations, "pipelinesascode.tekton.dev/log-url")
	before := build.DeepCopy()
	build.Finalizers = append(build.Finalizers, konflux.FinalizerBuildRouting)
	build.Annotations[konflux.AnnotationNudgeRouted] = "operand"
	require.NoError(t, kc.Patch(ctx, &build, ctrlclient.MergeFromWithOptions(before, ctrlclient.MergeFromWithOptimisticLock{})))
	var onServer tektonv1.PipelineRun
	require.NoError(t, live.Get(ctx, ctrlclient.ObjectKeyFromObject(&build), &onServer))
	require.Equal(t, spec(), onServer.Spec, "the spec the cache dropped is whole on the server")
	require.Contains(t, onServer.Finalizers, konflux.FinalizerBuildRouting)
	require.Equal(t, "operand", onServer.Annotations[konflux.AnnotationNudgeRouted])
	require.Equal(t, "https://console.example.com/operand-on-push-1", onServer.Annotations["pipelinesascode.tekton.dev/log-url"],
		"an annotation the cache dropped is kept on the server")

	// The field index (the backlog's) finds the held build once the cache has the
	// finalizer, by namespace or across namespaces; a label selector still applies.
	heldBuilds := func(opts ...ctrlclient.ListOption) []string {
		var list tektonv1.PipelineRunList
		require.NoError(t, kc.List(ctx, &list, append(opts, ctrlclient.MatchingFields{builds.HeldBuildsField: "true"})...))
		var names []string
		for _, plr := range list.Items {
			names = append(names, plr.Name)
		}
		return names
	}
	require.Eventually(t, func() bool { return len(heldBuilds()) == 1 }, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, []string{"operand-on-push-1"}, heldBuilds(ctrlclient.InNamespace(ns)))
	require.Empty(t, heldBuilds(ctrlclient.InNamespace("elsewhere")))
	require.Empty(t, heldBuilds(ctrlclient.MatchingLabels{builds.LabelComponent: "other"}))

	// spec.status patched from the stripped cached nudge (as the held-nudge reconciler cancels).
	var cached tektonv1.PipelineRun
	require.Eventually(t, func() bool {
		return kc.Get(ctx, ctrlclient.ObjectKeyFromObject(nudge), &cached) == nil && cached.UID == nudge.UID
	}, 30*time.Second, 50*time.Millisecond)
	require.Nil(t, cached.Spec.PipelineSpec, "the cached nudge is stripped")
	before = cached.DeepCopy()
	cached.Spec.Status = tektonv1.PipelineRunSpecStatusCancelled
	require.NoError(t, kc.Patch(ctx, &cached, ctrlclient.MergeFrom(before)))
	require.NoError(t, live.Get(ctx, ctrlclient.ObjectKeyFromObject(nudge), &onServer))
	require.EqualValues(t, tektonv1.PipelineRunSpecStatusCancelled, onServer.Spec.Status)
	require.Equal(t, nudge.Spec.PipelineSpec, onServer.Spec.PipelineSpec, "the embedded pipeline the cache dropped is whole on the server")
	require.Equal(t, nudge.Spec.Params, onServer.Spec.Params)
}

// The first list of PipelineRuns is paged at listPageSize, asked at the current
// version (the API server pages only that), and each page reaches the reflector
// compacted; later lists keep the version they ask for.
func TestFirstListIsPagedSmallAndCompacted(t *testing.T) {
	var asked []metav1.ListOptions
	lw := pagedCachedPipelineRuns(&toolscache.ListWatch{
		ListWithContextFunc: func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			asked = append(asked, opts)
			return &tektonv1.PipelineRunList{ListMeta: metav1.ListMeta{Continue: "next"}, Items: []tektonv1.PipelineRun{{
				ObjectMeta: metav1.ObjectMeta{Name: "build", Namespace: "tenant", Labels: map[string]string{konflux.LabelPipelineType: "build"}},
			}}}, nil
		},
	})
	page, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 500})
	require.NoError(t, err)
	runs, ok := page.(*cachedRunList)
	require.True(t, ok, "a page of cachedRuns, not %T", page)
	require.Len(t, runs.Items, 1)
	require.Equal(t, "next", runs.Continue, "the continue token goes back to the pager")
	_, err = lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "42", Limit: 50})
	require.NoError(t, err)
	require.Equal(t, []metav1.ListOptions{{ResourceVersion: "", Limit: listPageSize}, {ResourceVersion: "42", Limit: 50}}, asked)
}
