package bridge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// The bridge's informer cache, sized for a Konflux cluster (issue 22: 100,000
// PipelineRuns of tens of KB each, a 512 MiB memory limit).
//
// Which PipelineRuns: the bridge reads two kinds, and only those — builds
// (pipelines.appstudio.openshift.io/type=build: the build, PR-group and push-build
// reconcilers, the build a nudge names) and nudges
// (build.appstudio.redhat.com/type=nudge: the held-nudge and Renovate-run
// reconcilers, a namespace's nudge runs). One label selector cannot OR two keys, so
// PipelineRuns are cached by two informers, one per selector (newCache), and
// integration tests, releases and every other run never reach the bridge. A
// PipelineRun of neither kind read through the manager's client is not found: such
// a read must go to the API reader (mgr.GetAPIReader()).
//
// What of them: StripPipelineRun keeps what the bridge reads and drops the rest
// (see there). A cached PipelineRun is therefore not the object on the server: the
// bridge writes PipelineRuns only with patches computed between two versions of
// the cached copy (client.MergeFrom), which carry only what changed. Never Update
// a cached PipelineRun (it would erase the spec on the server) nor
// Status().Update it.

// Label selectors of the two PipelineRun informers.
var (
	buildRunsSelector = labels.SelectorFromSet(labels.Set{konflux.LabelPipelineType: "build"})
	nudgeRunsSelector = labels.SelectorFromSet(labels.Set{konflux.LabelNudgeType: konflux.NudgeTypeValue})
)

var pipelineRunGVK = tektonv1.SchemeGroupVersion.WithKind("PipelineRun")

// cacheOptions: every object loses metadata.managedFields (the bridge never reads
// them); PipelineRuns are the build runs, stripped (the nudge runs are newCache's
// second cache).
func cacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[ctrlclient.Object]cache.ByObject{&tektonv1.PipelineRun{}: pipelineRunsBy(buildRunsSelector)},
		NewInformer:      newInformer,
	}
}

// newInformer lists PipelineRuns page by page, each page stripped as it arrives.
//
// An informer's first list asks for resourceVersion "0", which the API server
// answers from its watch cache in one piece whatever the limit: 75,000 builds of
// 35 KB, 2.6 GB of JSON, decoded whole before the cache's transform sees the
// first run — a bridge limited to 512 MiB is killed before it syncs. Asked for the
// current version instead (resourceVersion "", a consistent read), the API server
// pages the list (the reflector asks for 500 at a time), and stripping each page
// before the next one is read keeps only stripped runs: the peak is one page.
func newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if _, ok := obj.(*tektonv1.PipelineRun); ok {
		lw = pagedStrippedPipelineRuns(toolscache.ToListerWatcherWithContext(lw))
	}
	return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

func pagedStrippedPipelineRuns(lw toolscache.ListerWatcherWithContext) *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			if opts.ResourceVersion == "0" && opts.Limit > 0 {
				opts.ResourceVersion = ""
			}
			list, err := lw.ListWithContext(ctx, opts)
			if runs, ok := list.(*tektonv1.PipelineRunList); ok && err == nil {
				for i := range runs.Items {
					_, _ = StripPipelineRun(&runs.Items[i])
				}
			}
			return list, err
		},
		WatchFuncWithContext: lw.WatchWithContext,
	}
}

func pipelineRunsBy(selector labels.Selector) cache.ByObject {
	return cache.ByObject{Label: selector, Transform: StripPipelineRun}
}

// newCache is the manager's cache: the cache of opts (builds among PipelineRuns)
// and a second one of the nudge runs, merged for PipelineRuns.
func newCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	main, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	nudgeOpts := opts
	nudgeOpts.ByObject = map[ctrlclient.Object]cache.ByObject{&tektonv1.PipelineRun{}: pipelineRunsBy(nudgeRunsSelector)}
	nudges, err := cache.New(cfg, nudgeOpts)
	if err != nil {
		return nil, fmt.Errorf("creating the cache of nudge PipelineRuns: %w", err)
	}
	return &pipelineRunCache{Cache: main, nudges: nudges, scheme: opts.Scheme}, nil
}

// pipelineRunCache answers for PipelineRuns from both caches (builds first) and
// for everything else from the main one.
type pipelineRunCache struct {
	cache.Cache // everything but nudge PipelineRuns
	nudges      cache.Cache
	scheme      *runtime.Scheme
}

var _ cache.Cache = &pipelineRunCache{}

// pipelineRuns reports whether obj is a PipelineRun or a list of them.
func (c *pipelineRunCache) pipelineRuns(obj runtime.Object) bool {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return false
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	return gvk == pipelineRunGVK
}

func (c *pipelineRunCache) Get(ctx context.Context, key ctrlclient.ObjectKey, obj ctrlclient.Object, opts ...ctrlclient.GetOption) error {
	err := c.Cache.Get(ctx, key, obj, opts...)
	if !apierrors.IsNotFound(err) || !c.pipelineRuns(obj) {
		return err
	}
	return c.nudges.Get(ctx, key, obj, opts...)
}

// List of PipelineRuns: both caches' (each applies the options), a run of both
// kinds once. A limit would cut each list, not their union: refused.
func (c *pipelineRunCache) List(ctx context.Context, list ctrlclient.ObjectList, opts ...ctrlclient.ListOption) error {
	if !c.pipelineRuns(list) {
		return c.Cache.List(ctx, list, opts...)
	}
	if (&ctrlclient.ListOptions{}).ApplyOptions(opts).Limit > 0 {
		return errors.New("listing cached PipelineRuns with a limit: the bridge caches them in two informers")
	}
	more, ok := list.DeepCopyObject().(ctrlclient.ObjectList)
	if !ok {
		return fmt.Errorf("copying %T", list)
	}
	if err := c.Cache.List(ctx, list, opts...); err != nil {
		return err
	}
	if err := c.nudges.List(ctx, more, opts...); err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	others, err := meta.ExtractList(more)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(items))
	for _, o := range items {
		if m, err := meta.Accessor(o); err == nil {
			seen[m.GetNamespace()+"/"+m.GetName()] = true
		}
	}
	for _, o := range others {
		if m, err := meta.Accessor(o); err == nil && !seen[m.GetNamespace()+"/"+m.GetName()] {
			items = append(items, o)
		}
	}
	return meta.SetList(list, items)
}

func (c *pipelineRunCache) GetInformer(ctx context.Context, obj ctrlclient.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if !c.pipelineRuns(obj) {
		return c.Cache.GetInformer(ctx, obj, opts...)
	}
	return c.bothInformers(func(from cache.Cache) (cache.Informer, error) { return from.GetInformer(ctx, obj, opts...) })
}

func (c *pipelineRunCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if gvk != pipelineRunGVK {
		return c.Cache.GetInformerForKind(ctx, gvk, opts...)
	}
	return c.bothInformers(func(from cache.Cache) (cache.Informer, error) { return from.GetInformerForKind(ctx, gvk, opts...) })
}

// bothInformers are the builds' and the nudges' PipelineRun informers as one.
func (c *pipelineRunCache) bothInformers(get func(cache.Cache) (cache.Informer, error)) (cache.Informer, error) {
	builds, err := get(c.Cache)
	if err != nil {
		return nil, err
	}
	nudges, err := get(c.nudges)
	if err != nil {
		return nil, err
	}
	return bothInformers{builds, nudges}, nil
}

func (c *pipelineRunCache) RemoveInformer(ctx context.Context, obj ctrlclient.Object) error {
	if !c.pipelineRuns(obj) {
		return c.Cache.RemoveInformer(ctx, obj)
	}
	return errors.Join(c.Cache.RemoveInformer(ctx, obj), c.nudges.RemoveInformer(ctx, obj))
}

func (c *pipelineRunCache) IndexField(ctx context.Context, obj ctrlclient.Object, field string, extract ctrlclient.IndexerFunc) error {
	if !c.pipelineRuns(obj) {
		return c.Cache.IndexField(ctx, obj, field, extract)
	}
	return errors.Join(c.Cache.IndexField(ctx, obj, field, extract), c.nudges.IndexField(ctx, obj, field, extract))
}

// Start runs both caches until ctx ends.
func (c *pipelineRunCache) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nudges := make(chan error, 1)
	go func() { nudges <- c.nudges.Start(ctx) }()
	err := c.Cache.Start(ctx)
	cancel() // the main cache ended: the nudges' ends with it
	return errors.Join(err, <-nudges)
}

func (c *pipelineRunCache) WaitForCacheSync(ctx context.Context) bool {
	return c.Cache.WaitForCacheSync(ctx) && c.nudges.WaitForCacheSync(ctx)
}

// bothInformers are the two PipelineRun informers as one: a handler receives the
// events of both (a run of both kinds, twice: reconcilers are idempotent).
type bothInformers [2]cache.Informer

// bothRegistrations is a handler's registration with each informer.
type bothRegistrations [2]toolscache.ResourceEventHandlerRegistration

func (r bothRegistrations) HasSynced() bool { return r[0].HasSynced() && r[1].HasSynced() }

func (b bothInformers) register(add func(cache.Informer) (toolscache.ResourceEventHandlerRegistration, error)) (toolscache.ResourceEventHandlerRegistration, error) {
	var regs bothRegistrations
	var err error
	if regs[0], err = add(b[0]); err != nil {
		return nil, err
	}
	if regs[1], err = add(b[1]); err != nil {
		_ = b[0].RemoveEventHandler(regs[0])
		return nil, err
	}
	return regs, nil
}

func (b bothInformers) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return b.register(func(i cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandler(h)
	})
}

func (b bothInformers) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return b.register(func(i cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandlerWithResyncPeriod(h, resync)
	})
}

func (b bothInformers) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return b.register(func(i cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandlerWithOptions(h, o)
	})
}

func (b bothInformers) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	regs, ok := handle.(bothRegistrations)
	if !ok {
		return fmt.Errorf("registration %T is not of the PipelineRun informers", handle)
	}
	return errors.Join(b[0].RemoveEventHandler(regs[0]), b[1].RemoveEventHandler(regs[1]))
}

func (b bothInformers) AddIndexers(indexers toolscache.Indexers) error {
	return errors.Join(b[0].AddIndexers(indexers), b[1].AddIndexers(indexers))
}

func (b bothInformers) HasSynced() bool { return b[0].HasSynced() && b[1].HasSynced() }
func (b bothInformers) IsStopped() bool { return b[0].IsStopped() || b[1].IsStopped() }

// StripPipelineRun is the cache transform of PipelineRuns. It keeps what the
// bridge's readers read:
//   - metadata but managedFields, and but the labels and annotations of the
//     services the bridge never asks (keptKey);
//   - of the spec, spec.status alone (held nudges, the Renovate branch queue); a
//     nudge's spec embeds its whole pipeline;
//   - of the status, conditions, results, start and completion times — not the
//     resolved pipeline (status.pipelineSpec, tens of KB for a Konflux build),
//     child references, skipped tasks, provenance or span context.
//
// Label and annotation keys, and the short values many runs share, are interned:
// 75,000 builds repeat the same few dozen keys.
func StripPipelineRun(in any) (any, error) {
	plr, ok := in.(*tektonv1.PipelineRun)
	if !ok {
		return in, nil // a tombstone: client-go hands it on untransformed
	}
	plr.ManagedFields = nil
	plr.Labels = keptKeys(plr.Labels)
	plr.Annotations = keptKeys(plr.Annotations)
	plr.Spec = tektonv1.PipelineRunSpec{Status: plr.Spec.Status}
	st := &plr.Status.PipelineRunStatusFields
	st.PipelineSpec = nil
	st.ChildReferences = nil
	st.SkippedTasks = nil
	st.Provenance = nil
	st.SpanContext = nil
	return plr, nil
}

// Keys of other services no reader of the bridge asks for: Pipelines as Code's
// bookkeeping (but the event type, source branch, pull request, repository URL
// and SHA, which the bridge reads), Tekton Results' and Chains' records, kubectl's
// last applied configuration.
var (
	droppedKeyPrefixes = []string{"pipelinesascode.tekton.dev/", "results.tekton.dev/", "chains.tekton.dev/"}
	droppedKeys        = map[string]bool{"kubectl.kubernetes.io/last-applied-configuration": true}
	keptPaCKeys        = map[string]bool{
		konflux.AnnotationEventType:                true,
		"pipelinesascode.tekton.dev/source-branch": true,
		"pipelinesascode.tekton.dev/pull-request":  true,
		"pipelinesascode.tekton.dev/repo-url":      true,
		"pipelinesascode.tekton.dev/sha":           true,
	}
)

func keptKey(k string) bool {
	if droppedKeys[k] {
		return false
	}
	for _, p := range droppedKeyPrefixes {
		if strings.HasPrefix(k, p) {
			return keptPaCKeys[k]
		}
	}
	return true
}

// keptKeys is m without the dropped keys, its keys and short values interned.
func keptKeys(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if keptKey(k) {
			if len(v) <= maxInternedValue {
				v = internedValues.intern(v)
			}
			out[internedKeys.intern(k)] = v
		}
	}
	return out
}

// internedKeys and internedValues hold one copy of each label and annotation key
// and short value of the cached runs: a cluster's runs share a few hundred keys
// and values (event and pipeline types, branch, application and component names).
// Each table stops growing at maxInterned strings (then new strings are kept as
// they are): values unique to a run (timestamps, numbers) fill the values' table,
// never the keys'.
var internedKeys, internedValues = &internTable{m: map[string]string{}}, &internTable{m: map[string]string{}}

const (
	maxInterned      = 20000
	maxInternedValue = 48
)

type internTable struct {
	sync.RWMutex
	m map[string]string
}

func (t *internTable) intern(s string) string {
	t.RLock()
	c, ok := t.m[s]
	t.RUnlock()
	if ok {
		return c
	}
	t.Lock()
	defer t.Unlock()
	if c, ok := t.m[s]; ok {
		return c
	}
	if len(t.m) >= maxInterned {
		return s
	}
	t.m[s] = s
	return s
}
