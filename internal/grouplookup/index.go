package grouplookup

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
)

// NudgedField indexes ChangeGroups by "<namespace>/<nudged component>", so a holding
// question reads the groups of one bundle, not every group of the namespace.
const NudgedField = "nudgeflow.nudgedComponent"

func nudgedKey(namespace, target string) string { return namespace + "/" + target }

// RegisterIndexes adds NudgedField to a manager's cache; call it before the manager
// starts.
func RegisterIndexes(ctx context.Context, indexer ctrlclient.FieldIndexer) error {
	err := indexer.IndexField(ctx, &appstudiov1alpha1.ChangeGroup{}, NudgedField, func(o ctrlclient.Object) []string {
		cg := o.(*appstudiov1alpha1.ChangeGroup)
		return []string{nudgedKey(cg.Namespace, cg.Spec.NudgedComponent)}
	})
	if err != nil {
		return fmt.Errorf("indexing ChangeGroups by nudged component: %w", err)
	}
	return nil
}

// groupsOf lists the ChangeGroups of one nudged component. On a cache with
// NudgedField that is an index lookup; a reader without it (the API server, a
// test's client) lists the namespace instead.
//
// The groups are read-only: from an informer cache they are shallow copies of the
// cached objects (UnsafeDisableDeepCopy), sharing their maps and slices with it. A
// group's deep copy costs more than the rest of an admission (its status lists every
// member and build), and a caller needs at most the one it picks: it deep-copies
// that one (see FindHolding).
func groupsOf(ctx context.Context, c ctrlclient.Reader, namespace, target string) ([]appstudiov1alpha1.ChangeGroup, error) {
	var list appstudiov1alpha1.ChangeGroupList
	err := c.List(ctx, &list, ctrlclient.InNamespace(namespace), ctrlclient.MatchingFields{NudgedField: nudgedKey(namespace, target)},
		ctrlclient.UnsafeDisableDeepCopy)
	if err != nil && (apierrors.IsBadRequest(err) || strings.Contains(strings.ToLower(err.Error()), "index with name")) {
		list = appstudiov1alpha1.ChangeGroupList{}
		err = c.List(ctx, &list, ctrlclient.InNamespace(namespace), ctrlclient.UnsafeDisableDeepCopy)
	}
	if err != nil {
		return nil, fmt.Errorf("listing ChangeGroups of %s/%s: %w", namespace, target, err)
	}
	out := list.Items[:0]
	for _, cg := range list.Items {
		if cg.Spec.NudgedComponent == target {
			out = append(out, cg)
		}
	}
	return out, nil
}

// admittedTTL bounds how long a group admitted by this process is trusted before
// the cache shows it; a group that admission passed but the API server did not
// store (another webhook refused it) is forgotten after it.
const admittedTTL = time.Minute

// Index answers the holding questions at admission from an informer cache — no
// API server read on the hot path — and closes the cache's one gap: a group created
// a moment ago, which the cache has not received yet. The ChangeGroup validating
// webhook runs in the same process and tells the Index every group it admits; the
// Index counts those until the cache has them (by UID). Across bridge replicas the
// gap is the watch latency (milliseconds); a nudge that slips through it is not lost:
// the build router delivers the build to the group as well.
type Index struct {
	// Cache is the manager's cached reader, with RegisterIndexes applied.
	Cache ctrlclient.Reader
	// Live reads past the cache. Only a group admitted here that the cache does not
	// have yet is read live (the rare moment after a create): one deleted at once, or
	// refused by another webhook after ours, must not hold nudges or block a new group.
	Live ctrlclient.Reader
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu       sync.Mutex
	admitted map[string][]admittedGroup // nudgedKey -> groups
}

type admittedGroup struct {
	cg *appstudiov1alpha1.ChangeGroup
	at time.Time
}

func (x *Index) now() time.Time {
	if x.Now != nil {
		return x.Now()
	}
	return time.Now()
}

// Admitted records a group the validating webhook just accepted (it carries the
// UID the API server assigned before validation).
func (x *Index) Admitted(cg *appstudiov1alpha1.ChangeGroup) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.admitted == nil {
		x.admitted = map[string][]admittedGroup{}
	}
	key := nudgedKey(cg.Namespace, cg.Spec.NudgedComponent)
	x.admitted[key] = append(x.admitted[key], admittedGroup{cg: cg.DeepCopy(), at: x.now()})
}

// Admitting reports whether cg is a group admitted here within admittedTTL: it may
// not be stored yet, so a read past the cache cannot tell whether it competes.
func (x *Index) Admitting(cg *appstudiov1alpha1.ChangeGroup) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, a := range x.admitted[nudgedKey(cg.Namespace, cg.Spec.NudgedComponent)] {
		if a.cg.UID == cg.UID && x.now().Sub(a.at) <= admittedTTL {
			return true
		}
	}
	return false
}

// Groups lists the groups of one nudged component: the cache's, plus those admitted
// here that the cache does not have yet. They are read-only (see groupsOf).
func (x *Index) Groups(ctx context.Context, namespace, target string) ([]appstudiov1alpha1.ChangeGroup, error) {
	groups, err := groupsOf(ctx, x.Cache, namespace, target)
	if err != nil {
		return nil, err
	}
	key := nudgedKey(namespace, target)
	x.mu.Lock()
	if len(x.admitted[key]) == 0 {
		// The usual case: nothing admitted here that the cache may lack.
		x.mu.Unlock()
		return groups, nil
	}
	cached := make(map[types.UID]bool, len(groups))
	for _, cg := range groups {
		cached[cg.UID] = true
	}
	pending := x.admitted[key][:0]
	for _, a := range x.admitted[key] {
		if !cached[a.cg.UID] && x.now().Sub(a.at) <= admittedTTL {
			pending = append(pending, a)
		}
	}
	if len(pending) == 0 {
		delete(x.admitted, key)
	} else {
		x.admitted[key] = pending
	}
	candidates := append([]admittedGroup(nil), pending...)
	x.mu.Unlock()

	for _, a := range candidates {
		cg := a.cg.DeepCopy()
		if x.Live != nil {
			var live appstudiov1alpha1.ChangeGroup
			err := x.Live.Get(ctx, types.NamespacedName{Namespace: cg.Namespace, Name: cg.Name}, &live)
			if apierrors.IsNotFound(err) || (err == nil && live.UID != cg.UID) {
				x.forget(key, cg.UID) // never stored, or deleted already
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading ChangeGroup %s/%s: %w", cg.Namespace, cg.Name, err)
			}
			cg = &live
		}
		groups = append(groups, *cg)
	}
	return groups, nil
}

func (x *Index) forget(key string, uid types.UID) {
	x.mu.Lock()
	defer x.mu.Unlock()
	kept := x.admitted[key][:0]
	for _, a := range x.admitted[key] {
		if a.cg.UID != uid {
			kept = append(kept, a)
		}
	}
	if len(kept) == 0 {
		delete(x.admitted, key)
	} else {
		x.admitted[key] = kept
	}
}

// FindHolding returns the collecting ChangeGroup (Collecting) that holds source -> target, or nil.
// When several match (admission prevents it, but objects may predate the rule) the
// oldest wins, so every caller picks the same one.
func (x *Index) FindHolding(ctx context.Context, namespace, source, target string) (*appstudiov1alpha1.ChangeGroup, error) {
	groups, err := x.Groups(ctx, namespace, target)
	if err != nil {
		return nil, err
	}
	return oldestOf(groups, func(cg *appstudiov1alpha1.ChangeGroup) bool { return Collecting(cg) && Holds(cg, source, target) }).DeepCopy(), nil
}
