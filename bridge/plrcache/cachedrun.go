package plrcache

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
)

// cachedRun is a build or nudge PipelineRun as the bridge's informers hold it:
// exactly what StripPipelineRun keeps, in half its heap. A stripped
// tektonv1.PipelineRun still carries the 568-byte struct of metadata, spec and
// status and two Go maps of about 300 bytes each; a cachedRun is one 256-byte
// struct, its labels and annotations two small slices whose keys are numbers in a
// table all runs share (cachedKeys). At 75,000 cached runs (a cluster of 100,000
// PipelineRuns) that is the difference between about 170 and 85 MB of heap.
//
// Readers never see one: the cache's Get and List, its informers' event handlers
// and indexers hand out expand()'s *tektonv1.PipelineRun, equal field by field to
// the stripped run (TestCachedRunRoundTrip).
type cachedRun struct {
	name, namespace, uid, resourceVersion string
	generation                            int64
	created, start, completion            int64 // packTime
	rare                                  *cachedRunRare
	keys                                  []uint16 // the labels' keys, then the annotations' (cachedKeys)
	values                                []string // their values, in the same order
	labels                                uint16   // how many of keys are labels
	flags                                 cachedRunFlags
	specStatus                            tektonv1.PipelineRunSpecStatus
	succeeded                             cachedCondition
	results                               []tektonv1.PipelineRunResult
}

// cachedRunRare: what only a run being deleted or held has.
type cachedRunRare struct {
	deleted       *metav1.Time
	deletionGrace *int64
	finalizers    []string
}

// cachedCondition is the Succeeded condition (type and severity are implied).
type cachedCondition struct {
	status          corev1.ConditionStatus
	reason, message string
	lastTransition  int64 // packTime
}

type cachedRunFlags uint8

const (
	hasLabels      cachedRunFlags = 1 << iota // a map, even empty (StripPipelineRun keeps empty maps)
	hasAnnotations                            // likewise
	hasSucceeded                              // the Succeeded condition
)

// cachedRunList is a page of a PipelineRun list, each run already a cachedRun: the
// informer's first list keeps only these, never a page of full runs longer than
// it takes to read the next one (pagedCachedPipelineRuns).
type cachedRunList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []*cachedRun
}

var (
	_ metav1.Object        = &cachedRun{}
	_ runtime.Object       = &cachedRun{}
	_ metav1.ListInterface = &cachedRunList{}
)

// CompactPipelineRun is the cache transform of PipelineRuns: StripPipelineRun, then the
// compact form. A run already compact (the first list's, see cachedRunList) passes
// as it is, and so does a tombstone (client-go hands it on untransformed).
func CompactPipelineRun(in any) (any, error) {
	switch obj := in.(type) {
	case *cachedRun:
		return obj, nil
	case *tektonv1.PipelineRun:
		stripped, err := stripPipelineRun(obj)
		if err != nil {
			return nil, err
		}
		return compact(stripped.(*tektonv1.PipelineRun))
	default:
		return in, nil
	}
}

// compact is plr (already stripped) as a cachedRun.
func compact(plr *tektonv1.PipelineRun) (*cachedRun, error) {
	c := &cachedRun{
		name: plr.Name, namespace: plr.Namespace, uid: string(plr.UID), resourceVersion: plr.ResourceVersion,
		generation: plr.Generation,
		created:    packTime(&plr.CreationTimestamp),
		start:      packTime(plr.Status.StartTime),
		completion: packTime(plr.Status.CompletionTime),
		specStatus: plr.Spec.Status,
	}
	if plr.DeletionTimestamp != nil || plr.DeletionGracePeriodSeconds != nil || len(plr.Finalizers) > 0 {
		c.rare = &cachedRunRare{deleted: plr.DeletionTimestamp, deletionGrace: plr.DeletionGracePeriodSeconds, finalizers: plr.Finalizers}
	}
	if err := c.setKeys(plr.Labels, plr.Annotations); err != nil {
		return nil, fmt.Errorf("caching PipelineRun %s/%s: %w", plr.Namespace, plr.Name, err)
	}
	if cond := plr.Status.GetCondition(apis.ConditionSucceeded); cond != nil {
		c.flags |= hasSucceeded
		c.succeeded = cachedCondition{status: cond.Status, reason: cond.Reason, message: cond.Message,
			lastTransition: packTime(&cond.LastTransitionTime.Inner)}
	}
	if len(plr.Status.Results) > 0 {
		// Exactly as long as needed: the stripped run's slice has room for three.
		c.results = append(make([]tektonv1.PipelineRunResult, 0, len(plr.Status.Results)), plr.Status.Results...)
	}
	return c, nil
}

// setKeys stores labels and annotations (their keys and short values are
// already interned by StripPipelineRun). A value the run repeats (a commit SHA is
// a label and an annotation) is stored once.
func (c *cachedRun) setKeys(labels, annotations map[string]string) error {
	n := len(labels) + len(annotations)
	if n > math.MaxUint16 {
		return fmt.Errorf("%d labels and annotations", n)
	}
	c.flags &^= hasLabels | hasAnnotations
	if labels != nil {
		c.flags |= hasLabels
	}
	if annotations != nil {
		c.flags |= hasAnnotations
	}
	c.keys, c.values, c.labels = nil, nil, uint16(len(labels))
	if n == 0 {
		return nil
	}
	c.keys, c.values = make([]uint16, 0, n), make([]string, 0, n)
	for _, m := range []map[string]string{labels, annotations} {
		for k, v := range m {
			id, err := cachedKeys.id(k)
			if err != nil {
				return err
			}
			for _, seen := range c.values {
				if seen == v {
					v = seen
					break
				}
			}
			c.keys, c.values = append(c.keys, id), append(c.values, v)
		}
	}
	return nil
}

// expand is the stripped PipelineRun c was made of.
func (c *cachedRun) expand() *tektonv1.PipelineRun {
	plr := &tektonv1.PipelineRun{
		TypeMeta: metav1.TypeMeta{APIVersion: tektonv1.SchemeGroupVersion.String(), Kind: pipelineRunGVK.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name: c.name, Namespace: c.namespace, UID: types.UID(c.uid), ResourceVersion: c.resourceVersion,
			Generation: c.generation, CreationTimestamp: c.GetCreationTimestamp(),
			Labels: c.GetLabels(), Annotations: c.GetAnnotations(),
		},
		Spec: tektonv1.PipelineRunSpec{Status: c.specStatus},
		Status: tektonv1.PipelineRunStatus{PipelineRunStatusFields: tektonv1.PipelineRunStatusFields{
			StartTime: unpackTimePtr(c.start), CompletionTime: unpackTimePtr(c.completion),
		}},
	}
	if c.rare != nil {
		plr.DeletionTimestamp = c.rare.deleted.DeepCopy()
		if c.rare.deletionGrace != nil {
			grace := *c.rare.deletionGrace
			plr.DeletionGracePeriodSeconds = &grace
		}
		if c.rare.finalizers != nil {
			plr.Finalizers = append([]string{}, c.rare.finalizers...)
		}
	}
	if c.flags&hasSucceeded != 0 {
		plr.Status.Conditions = duckv1.Conditions{{
			Type: apis.ConditionSucceeded, Status: c.succeeded.status, Reason: c.succeeded.reason, Message: c.succeeded.message,
			LastTransitionTime: apis.VolatileTime{Inner: unpackTime(c.succeeded.lastTransition)},
		}}
	}
	if c.results != nil {
		plr.Status.Results = make([]tektonv1.PipelineRunResult, len(c.results))
		for i := range c.results {
			c.results[i].DeepCopyInto(&plr.Status.Results[i])
		}
	}
	return plr
}

// expandCached is obj with every cachedRun in it expanded: what an event handler
// or indexer of the bridge is given.
func expandCached(obj any) any {
	switch o := obj.(type) {
	case *cachedRun:
		return o.expand()
	case toolscache.DeletedFinalStateUnknown:
		o.Obj = expandCached(o.Obj)
		return o
	default:
		return obj
	}
}

// packTime is t in nanoseconds since the epoch; 0 for none (nil or the zero time:
// the API's timestamps are never the epoch itself).
func packTime(t *metav1.Time) int64 {
	if t == nil || t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// unpackTime is packTime's time, in the local zone as metav1.Time decodes it.
func unpackTime(n int64) metav1.Time {
	if n == 0 {
		return metav1.Time{}
	}
	return metav1.NewTime(time.Unix(0, n))
}

func unpackTimePtr(n int64) *metav1.Time {
	if n == 0 {
		return nil
	}
	t := unpackTime(n)
	return &t
}

// cachedKeys numbers the label and annotation keys of cached runs. The keys are
// those StripPipelineRun keeps (an allow-list and nudgeflow's own prefix), a few
// dozen; the table refuses more than 65,536.
var cachedKeys = &keyTable{ids: map[string]uint16{}}

type keyTable struct {
	sync.RWMutex
	ids   map[string]uint16
	names []string
}

func (t *keyTable) id(key string) (uint16, error) {
	t.RLock()
	id, ok := t.ids[key]
	t.RUnlock()
	if ok {
		return id, nil
	}
	t.Lock()
	defer t.Unlock()
	if id, ok := t.ids[key]; ok {
		return id, nil
	}
	if len(t.names) > math.MaxUint16 {
		return 0, errors.New("more than 65,536 distinct label and annotation keys on cached PipelineRuns")
	}
	id = uint16(len(t.names))
	t.ids[key] = id
	t.names = append(t.names, key)
	return id, nil
}

func (t *keyTable) name(id uint16) string {
	t.RLock()
	defer t.RUnlock()
	return t.names[id]
}

// The metav1.Object of a cachedRun: what the informer's key and namespace index
// functions read. The setters keep the run consistent; what the cache does not
// keep (generateName, self link, owner references, managed fields) reads empty and
// is not stored.

func (c *cachedRun) GetNamespace() string                          { return c.namespace }
func (c *cachedRun) SetNamespace(namespace string)                 { c.namespace = namespace }
func (c *cachedRun) GetName() string                               { return c.name }
func (c *cachedRun) SetName(name string)                           { c.name = name }
func (c *cachedRun) GetGenerateName() string                       { return "" }
func (c *cachedRun) SetGenerateName(string)                        {}
func (c *cachedRun) GetUID() types.UID                             { return types.UID(c.uid) }
func (c *cachedRun) SetUID(uid types.UID)                          { c.uid = string(uid) }
func (c *cachedRun) GetResourceVersion() string                    { return c.resourceVersion }
func (c *cachedRun) SetResourceVersion(version string)             { c.resourceVersion = version }
func (c *cachedRun) GetGeneration() int64                          { return c.generation }
func (c *cachedRun) SetGeneration(generation int64)                { c.generation = generation }
func (c *cachedRun) GetSelfLink() string                           { return "" }
func (c *cachedRun) SetSelfLink(string)                            {}
func (c *cachedRun) GetCreationTimestamp() metav1.Time             { return unpackTime(c.created) }
func (c *cachedRun) SetCreationTimestamp(t metav1.Time)            { c.created = packTime(&t) }
func (c *cachedRun) GetOwnerReferences() []metav1.OwnerReference   { return nil }
func (c *cachedRun) SetOwnerReferences([]metav1.OwnerReference)    {}
func (c *cachedRun) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (c *cachedRun) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

func (c *cachedRun) rareFields() *cachedRunRare {
	if c.rare == nil {
		c.rare = &cachedRunRare{}
	}
	return c.rare
}

func (c *cachedRun) GetDeletionTimestamp() *metav1.Time {
	if c.rare == nil {
		return nil
	}
	return c.rare.deleted
}

func (c *cachedRun) SetDeletionTimestamp(t *metav1.Time) { c.rareFields().deleted = t }

func (c *cachedRun) GetDeletionGracePeriodSeconds() *int64 {
	if c.rare == nil {
		return nil
	}
	return c.rare.deletionGrace
}

func (c *cachedRun) SetDeletionGracePeriodSeconds(s *int64) { c.rareFields().deletionGrace = s }

func (c *cachedRun) GetFinalizers() []string {
	if c.rare == nil {
		return nil
	}
	return c.rare.finalizers
}

func (c *cachedRun) SetFinalizers(finalizers []string) { c.rareFields().finalizers = finalizers }

// GetLabels builds a new map on each call (the informer's own functions never
// call it; the cache's List does, for its label selector).
func (c *cachedRun) GetLabels() map[string]string {
	return c.keyMap(hasLabels, 0, int(c.labels))
}

func (c *cachedRun) GetAnnotations() map[string]string {
	return c.keyMap(hasAnnotations, int(c.labels), len(c.keys))
}

func (c *cachedRun) keyMap(flag cachedRunFlags, from, to int) map[string]string {
	if c.flags&flag == 0 {
		return nil
	}
	m := make(map[string]string, to-from)
	for i := from; i < to; i++ {
		m[cachedKeys.name(c.keys[i])] = c.values[i]
	}
	return m
}

func (c *cachedRun) SetLabels(labels map[string]string) {
	if err := c.setKeys(labels, c.GetAnnotations()); err != nil {
		panic(err)
	}
}

func (c *cachedRun) SetAnnotations(annotations map[string]string) {
	if err := c.setKeys(c.GetLabels(), annotations); err != nil {
		panic(err)
	}
}

// The runtime.Object of a cachedRun. A copy shares the slices: a cachedRun's are
// replaced, never written in place.
func (c *cachedRun) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (c *cachedRun) DeepCopyObject() runtime.Object {
	out := *c
	if c.rare != nil {
		rare := *c.rare
		out.rare = &rare
	}
	return &out
}

func (l *cachedRunList) DeepCopyObject() runtime.Object {
	out := &cachedRunList{TypeMeta: l.TypeMeta, Items: make([]*cachedRun, len(l.Items))}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	for i, run := range l.Items {
		out.Items[i] = run.DeepCopyObject().(*cachedRun)
	}
	return out
}
