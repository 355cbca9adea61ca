// Package plrcache is the bridge's PipelineRun cache, sized for a Konflux cluster:
// four informers (builds and nudges, old and new label forms), each holding
// runs stripped to what the bridge reads (StripPipelineRun) and compacted
// (CompactPipelineRun), seen by readers as *tektonv1.PipelineRun again. The
// bridge's manager takes Options and New; nothing else in the bridge knows it.
package plrcache

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
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
// (konflux.PipelineTypeKey=build: the build, PR-group and push-build reconcilers,
// the build a nudge names) and nudges (konflux.NudgeTypeKey=nudge: the held-nudge
// and Renovate-run reconcilers, a namespace's nudge runs), each labelled in the
// old (appstudio) or the new (konflux-ci.dev) form of ADR 69. One label selector
// cannot OR two keys, so PipelineRuns are cached by four informers, one per
// selector (runSelectors: disjoint, so no run is cached twice), and integration
// tests, releases and every other run never reach the bridge. A
// PipelineRun of neither kind read through the manager's client is not found: such
// a read must go to the API reader (mgr.GetAPIReader()).
//
// What of them: StripPipelineRun keeps what the bridge reads and drops the rest
// (see there), and the informers hold that as a cachedRun, half the heap of a
// stripped PipelineRun; Get, List and every event handler and indexer of a
// PipelineRun informer see it expanded back into a *tektonv1.PipelineRun. (A
// PipelineRun read as metadata or unstructured comes from controller-runtime's own
// informers of those, not from these.) A cached PipelineRun is therefore not the
// object on the server: the bridge writes PipelineRuns only with patches computed
// between two versions of the cached copy (client.MergeFrom), which carry only
// what changed. Never Update a cached PipelineRun (it would erase the spec on the
// server) nor Status().Update it.

// runSelectors are the label selectors of the PipelineRun informers: builds and
// nudges, each in the old form and in the new form without the old (Key.Selectors).
// The first is the main cache's (cacheOptions), the others New's.
var runSelectors = func() []labels.Selector {
	builds := konflux.PipelineTypeKey.Selectors(konflux.PipelineTypeBuild)
	nudges := konflux.NudgeTypeKey.Selectors(konflux.NudgeTypeValue)
	// Old forms first: the main cache holds old-model builds, today's bulk.
	return []labels.Selector{builds[1], builds[0], nudges[1], nudges[0]}
}()

// oldFormSelectors are runSelectors[1:] without the new forms: old-form nudges.
var oldFormSelectors = []labels.Selector{runSelectors[2]}

var pipelineRunGVK = tektonv1.SchemeGroupVersion.WithKind("PipelineRun")

// Options: every object loses metadata.managedFields (the bridge never reads
// them); PipelineRuns are the build runs, stripped (the nudge runs are New's
// second cache).
func Options() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[ctrlclient.Object]cache.ByObject{&tektonv1.PipelineRun{}: pipelineRunsBy(runSelectors[0])},
		NewInformer:      newInformer,
	}
}

// newInformer lists PipelineRuns page by page, each page made cachedRuns as it
// arrives.
//
// An informer's first list asks for resourceVersion "0", which the API server
// answers from its watch cache in one piece whatever the limit: 75,000 builds of
// 35 KB, 2.6 GB of JSON, decoded whole before the cache's transform sees the
// first run — a bridge limited to 512 MiB is killed before it syncs. Asked for the
// current version instead (resourceVersion "", a consistent read), the API server
// pages the list (listPageSize at a time), and compacting each page before the
// next one is read keeps only cachedRuns: the peak is one page. The
// reflector collects the pages' items before it fills the store; they are
// cachedRuns already, which the transform passes as they are.
func newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if _, ok := obj.(*tektonv1.PipelineRun); ok {
		lw = pagedCachedPipelineRuns(toolscache.ToListerWatcherWithContext(lw))
	}
	return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

// listPageSize is how many PipelineRuns one page of the first list asks for,
// instead of the reflector's 500. A page is held twice while it is decoded (the
// response body, read with io.ReadAll, and the PipelineRuns), in each of the two
// informers at once, and the garbage collector runs late on that under GOGC:
// with pages of 500 the bridge's start-up peak at 30,000 runs was 242 MiB, with
// 100 it is 118 MiB, for 9 % more sync time (docs/performance.md).
const listPageSize = 100

func pagedCachedPipelineRuns(lw toolscache.ListerWatcherWithContext) *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			if opts.ResourceVersion == "0" && opts.Limit > 0 {
				opts.ResourceVersion = ""
			}
			if opts.Limit > listPageSize {
				opts.Limit = listPageSize
			}
			list, err := lw.ListWithContext(ctx, opts)
			runs, ok := list.(*tektonv1.PipelineRunList)
			if err != nil || !ok {
				return list, err
			}
			page := &cachedRunList{TypeMeta: runs.TypeMeta, ListMeta: runs.ListMeta, Items: make([]*cachedRun, len(runs.Items))}
			for i := range runs.Items {
				run, err := CompactPipelineRun(&runs.Items[i])
				if err != nil {
					return nil, err
				}
				page.Items[i] = run.(*cachedRun)
			}
			return page, nil
		},
		WatchFuncWithContext: lw.WatchWithContext,
	}
}

func pipelineRunsBy(selector labels.Selector) cache.ByObject {
	return cache.ByObject{Label: selector, Transform: CompactPipelineRun}
}

// New is the manager's cache: the cache of opts (old-form builds among
// PipelineRuns) and one more per other selector of runSelectors, merged for
// PipelineRuns.
func New(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	return newCache(cfg, opts, runSelectors[1:])
}

// NewOldFormOnly is New without the informers of the new (konflux-ci.dev) form:
// for a cluster that serves no new-model Component, where no build or nudge
// carries those keys. Their informers would find nothing, and finding nothing is
// what costs: an API server that lists PipelineRuns from etcd (before 1.31, or
// without a watch cache for them) reads every PipelineRun of the cluster to fill
// the first page of a selector nothing matches — at 100,000 runs longer than its
// request timeout, so the bridge never became ready (docs/performance.md).
func NewOldFormOnly(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	return newCache(cfg, opts, oldFormSelectors)
}

func newCache(cfg *rest.Config, opts cache.Options, otherSelectors []labels.Selector) (cache.Cache, error) {
	main, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	c := &pipelineRunCache{Cache: main, scheme: opts.Scheme}
	for _, sel := range otherSelectors {
		more := opts
		more.ByObject = map[ctrlclient.Object]cache.ByObject{&tektonv1.PipelineRun{}: pipelineRunsBy(sel)}
		other, err := cache.New(cfg, more)
		if err != nil {
			return nil, fmt.Errorf("creating the cache of PipelineRuns labelled %s: %w", sel, err)
		}
		c.others = append(c.others, other)
	}
	return c, nil
}

// pipelineRunCache answers for PipelineRuns from all its caches (the main one
// first) and for everything else from the main one.
type pipelineRunCache struct {
	cache.Cache               // everything, and the PipelineRuns of runSelectors[0]
	others      []cache.Cache // the PipelineRuns of runSelectors[1:]
	scheme      *runtime.Scheme
}

// runCaches are the caches that hold PipelineRuns, the main one first.
func (c *pipelineRunCache) runCaches() []cache.Cache {
	return append([]cache.Cache{c.Cache}, c.others...)
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
	out, ok := obj.(*tektonv1.PipelineRun)
	if !ok {
		err := c.Cache.Get(ctx, key, obj, opts...)
		if !apierrors.IsNotFound(err) || !c.pipelineRuns(obj) {
			return err
		}
		for _, other := range c.others {
			if err = other.Get(ctx, key, obj, opts...); !apierrors.IsNotFound(err) {
				return err
			}
		}
		return err
	}
	for _, from := range c.runCaches() {
		runs, err := cachedRunsOf(ctx, from)
		if err != nil {
			return err
		}
		found, exists, err := runs.GetByKey(key.Namespace + "/" + key.Name)
		if err != nil {
			return err
		}
		if !exists {
			continue
		}
		run, ok := found.(*cachedRun)
		if !ok {
			return fmt.Errorf("the PipelineRun cache holds a %T", found)
		}
		*out = *run.expand()
		return nil
	}
	return apierrors.NewNotFound(schema.GroupResource{Group: pipelineRunGVK.Group, Resource: pipelineRunGVK.Kind}, key.Name)
}

// cachedRunsOf is the store of from's PipelineRun informer, once it has synced.
func cachedRunsOf(ctx context.Context, from cache.Cache) (toolscache.Indexer, error) {
	informer, err := from.GetInformer(ctx, &tektonv1.PipelineRun{})
	if err != nil {
		return nil, err
	}
	if !informer.HasSynced() {
		return nil, &cache.ErrCacheNotStarted{}
	}
	shared, ok := informer.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, fmt.Errorf("the PipelineRun informer is a %T, not a SharedIndexInformer", informer)
	}
	return shared.GetIndexer(), nil
}

// List of PipelineRuns: all caches' (the main one first), a run in two once,
// filtered by namespace, label selector and one exact field selector (an
// IndexField's index). Only the runs that pass are expanded. A limit would cut
// each list, not their union: refused.
func (c *pipelineRunCache) List(ctx context.Context, list ctrlclient.ObjectList, opts ...ctrlclient.ListOption) error {
	out, ok := list.(*tektonv1.PipelineRunList)
	if !ok {
		if c.pipelineRuns(list) {
			return c.listBoth(ctx, list, opts...)
		}
		return c.Cache.List(ctx, list, opts...)
	}
	o := (&ctrlclient.ListOptions{}).ApplyOptions(opts)
	switch {
	case o.Limit > 0:
		return errLimitedRunList
	case o.Continue != "":
		return errors.New("continuing a list of cached PipelineRuns: the cache lists in one piece")
	}
	seen := map[string]bool{}
	var items []tektonv1.PipelineRun
	for _, from := range c.runCaches() {
		runs, err := cachedRunsOf(ctx, from)
		if err != nil {
			return err
		}
		objs, err := listed(runs, o)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			run, ok := obj.(*cachedRun)
			if !ok {
				return fmt.Errorf("the PipelineRun cache holds a %T", obj)
			}
			key := run.namespace + "/" + run.name
			if seen[key] || (o.LabelSelector != nil && !o.LabelSelector.Matches(cachedLabels{run})) {
				continue
			}
			seen[key] = true
			items = append(items, *run.expand())
		}
	}
	out.Items = items
	out.Continue = ""
	return nil
}

// listed are the runs of one informer's store in o's namespace, or matching o's
// field selector (one exact requirement) there.
func listed(runs toolscache.Indexer, o *ctrlclient.ListOptions) ([]any, error) {
	if o.FieldSelector != nil && !o.FieldSelector.Empty() {
		reqs := o.FieldSelector.Requirements()
		if len(reqs) != 1 || (reqs[0].Operator != selection.Equals && reqs[0].Operator != selection.DoubleEquals) {
			return nil, fmt.Errorf("listing cached PipelineRuns by %q: one exact field requirement only", o.FieldSelector)
		}
		return runs.ByIndex(fieldIndexName(reqs[0].Field), fieldIndexKey(o.Namespace, reqs[0].Value))
	}
	if o.Namespace != "" {
		return runs.ByIndex(toolscache.NamespaceIndex, o.Namespace)
	}
	return runs.List(), nil
}

// errLimitedRunList: a limit would cut each informer's list, not their union.
var errLimitedRunList = errors.New("listing cached PipelineRuns with a limit: the bridge caches them in several informers")

// listBoth lists PipelineRuns read some other way (metadata, unstructured) from
// all caches' informers of that kind, a run in two once.
func (c *pipelineRunCache) listBoth(ctx context.Context, list ctrlclient.ObjectList, opts ...ctrlclient.ListOption) error {
	if (&ctrlclient.ListOptions{}).ApplyOptions(opts).Limit > 0 {
		return errLimitedRunList
	}
	if err := c.Cache.List(ctx, list, opts...); err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(items))
	for _, o := range items {
		if m, err := meta.Accessor(o); err == nil {
			seen[m.GetNamespace()+"/"+m.GetName()] = true
		}
	}
	for _, other := range c.others {
		more, ok := list.DeepCopyObject().(ctrlclient.ObjectList)
		if !ok {
			return fmt.Errorf("copying %T", list)
		}
		if err := other.List(ctx, more, opts...); err != nil {
			return err
		}
		others, err := meta.ExtractList(more)
		if err != nil {
			return err
		}
		for _, o := range others {
			if m, err := meta.Accessor(o); err == nil && !seen[m.GetNamespace()+"/"+m.GetName()] {
				seen[m.GetNamespace()+"/"+m.GetName()] = true
				items = append(items, o)
			}
		}
	}
	return meta.SetList(list, items)
}

// cachedLabels are a cached run's labels as a label selector reads them, without
// building a map per run.
type cachedLabels struct{ run *cachedRun }

func (l cachedLabels) Has(key string) bool {
	_, ok := l.Lookup(key)
	return ok
}

func (l cachedLabels) Get(key string) string {
	v, _ := l.Lookup(key)
	return v
}

func (l cachedLabels) Lookup(key string) (string, bool) {
	for i := 0; i < int(l.run.labels); i++ {
		if cachedKeys.name(l.run.keys[i]) == key {
			return l.run.values[i], true
		}
	}
	return "", false
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

// bothInformers are the PipelineRun informers of all caches as one.
func (c *pipelineRunCache) bothInformers(get func(cache.Cache) (cache.Informer, error)) (cache.Informer, error) {
	var all bothInformers
	for _, from := range c.runCaches() {
		i, err := get(from)
		if err != nil {
			return nil, err
		}
		all = append(all, i)
	}
	return all, nil
}

func (c *pipelineRunCache) RemoveInformer(ctx context.Context, obj ctrlclient.Object) error {
	if !c.pipelineRuns(obj) {
		return c.Cache.RemoveInformer(ctx, obj)
	}
	var errs []error
	for _, from := range c.runCaches() {
		errs = append(errs, from.RemoveInformer(ctx, obj))
	}
	return errors.Join(errs...)
}

// IndexField of PipelineRuns indexes both informers' runs, each expanded for
// extract, under controller-runtime's index names and keys, which List reads for
// an exact field selector.
func (c *pipelineRunCache) IndexField(ctx context.Context, obj ctrlclient.Object, field string, extract ctrlclient.IndexerFunc) error {
	if !c.pipelineRuns(obj) {
		return c.Cache.IndexField(ctx, obj, field, extract)
	}
	informer, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	return informer.AddIndexers(toolscache.Indexers{fieldIndexName(field): func(o any) ([]string, error) {
		obj, ok := o.(ctrlclient.Object)
		if !ok {
			return nil, fmt.Errorf("indexing %T by %s: not an object", o, field)
		}
		values := extract(obj)
		keys := make([]string, 0, 2*len(values))
		for _, v := range values {
			keys = append(keys, fieldIndexKey("", v), fieldIndexKey(obj.GetNamespace(), v))
		}
		return keys, nil
	}})
}

// fieldIndexName and fieldIndexKey name an index and its keys as controller-runtime's
// cache does (its IndexField and List).
func fieldIndexName(field string) string { return "field:" + field }

func fieldIndexKey(namespace, value string) string {
	if namespace == "" {
		namespace = "__all_namespaces"
	}
	return namespace + "/" + value
}

// Start runs all caches until ctx ends.
func (c *pipelineRunCache) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := make(chan error, len(c.others))
	for _, other := range c.others {
		go func() { ended <- other.Start(ctx) }()
	}
	errs := []error{c.Cache.Start(ctx)}
	cancel() // the main cache ended: the others end with it
	for range c.others {
		errs = append(errs, <-ended)
	}
	return errors.Join(errs...)
}

func (c *pipelineRunCache) WaitForCacheSync(ctx context.Context) bool {
	for _, from := range c.runCaches() {
		if !from.WaitForCacheSync(ctx) {
			return false
		}
	}
	return true
}

// bothInformers are the PipelineRun informers as one: a handler receives the
// events of all (a run in two of them, twice: reconcilers are idempotent; the
// selectors are disjoint, so only a run relabelled from one to another).
type bothInformers []cache.Informer

// bothRegistrations is a handler's registration with each informer.
type bothRegistrations []toolscache.ResourceEventHandlerRegistration

func (r bothRegistrations) HasSynced() bool {
	for _, reg := range r {
		if !reg.HasSynced() {
			return false
		}
	}
	return true
}

func (b bothInformers) register(add func(cache.Informer) (toolscache.ResourceEventHandlerRegistration, error)) (toolscache.ResourceEventHandlerRegistration, error) {
	regs := make(bothRegistrations, 0, len(b))
	for _, i := range b {
		reg, err := add(i)
		if err != nil {
			for j, r := range regs {
				_ = b[j].RemoveEventHandler(r)
			}
			return nil, err
		}
		regs = append(regs, reg)
	}
	return regs, nil
}

func (b bothInformers) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return b.register(func(i cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandler(expandingHandler{h})
	})
}

func (b bothInformers) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return b.register(func(i cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandlerWithResyncPeriod(expandingHandler{h}, resync)
	})
}

func (b bothInformers) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return b.register(func(i cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandlerWithOptions(expandingHandler{h}, o)
	})
}

func (b bothInformers) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	regs, ok := handle.(bothRegistrations)
	if !ok || len(regs) != len(b) {
		return fmt.Errorf("registration %T is not of the PipelineRun informers", handle)
	}
	var errs []error
	for i, r := range regs {
		errs = append(errs, b[i].RemoveEventHandler(r))
	}
	return errors.Join(errs...)
}

func (b bothInformers) AddIndexers(indexers toolscache.Indexers) error {
	expanding := make(toolscache.Indexers, len(indexers))
	for name, index := range indexers {
		expanding[name] = func(obj any) ([]string, error) { return index(expandCached(obj)) }
	}
	var errs []error
	for _, i := range b {
		errs = append(errs, i.AddIndexers(expanding))
	}
	return errors.Join(errs...)
}

// expandingHandler hands a handler PipelineRuns, not the cachedRuns the
// informers hold.
type expandingHandler struct {
	h toolscache.ResourceEventHandler
}

func (e expandingHandler) OnAdd(obj any, isInInitialList bool) {
	e.h.OnAdd(expandCached(obj), isInInitialList)
}
func (e expandingHandler) OnUpdate(oldObj, newObj any) {
	e.h.OnUpdate(expandCached(oldObj), expandCached(newObj))
}
func (e expandingHandler) OnDelete(obj any) { e.h.OnDelete(expandCached(obj)) }

func (b bothInformers) HasSynced() bool {
	for _, i := range b {
		if !i.HasSynced() {
			return false
		}
	}
	return true
}

func (b bothInformers) IsStopped() bool {
	for _, i := range b {
		if i.IsStopped() {
			return true
		}
	}
	return false
}

// ReturnSyncPeak gives the memory of the caches' first lists back to the system
// once every informer has synced. A bridge reads each page of full PipelineRuns
// once and keeps cachedRuns; the pages are garbage right after, but the Go
// runtime returns freed pages to the system only gradually, so without this a
// pod's RSS stays near its start-up peak (at 100,000 PipelineRuns, twice its
// steady size) for a long while.
type ReturnSyncPeak struct{ Cache cache.Cache }

func (r ReturnSyncPeak) Start(ctx context.Context) error {
	if r.Cache.WaitForCacheSync(ctx) {
		debug.FreeOSMemory()
	}
	return nil
}

// NeedLeaderElection: every replica's cache syncs, the leader's or not.
func (ReturnSyncPeak) NeedLeaderElection() bool { return false }
