// Package nudgeconfigs reads a namespace's NudgeConfig from whichever API the
// cluster serves, and converts between the two shapes:
//
//   - appstudio.redhat.com/v1beta2, as integration-service ships it (the kind the
//     Konflux docs tell tenants to write; build-service stands down where it exists);
//   - konflux-ci.dev/v1alpha1, nudgeflow's own (ADR 67 as written), served by
//     nudgeflow on clusters without the shipped one.
//
// Every reader of edges in nudgeflow goes through Get, so both kinds are read the
// same way. When a namespace holds both, the shipped one wins: it is the one
// build-service and integration-service act on.
package nudgeconfigs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
)

// Name is the singleton's name in both APIs.
const Name = konfluxv1alpha1.NudgeConfigName

// AnnotationBatching carries nudgeflow's batching policies on the shipped kind,
// which has no field for them: a JSON list of konflux-ci.dev BatchingPolicy
// objects, e.g. [{"target":"bundle","window":"30m"}]. integration-service keeps
// unknown annotations and ignores them.
const AnnotationBatching = "nudgeflow.konflux-ci.dev/batching"

// The two kinds.
var (
	Shipped = mirrorv1beta2.GroupVersion.WithKind("NudgeConfig")
	Own     = konfluxv1alpha1.GroupVersion.WithKind("NudgeConfig")
)

// IsShipped reports whether nc was read from integration-service's kind.
func IsShipped(nc *konfluxv1alpha1.NudgeConfig) bool {
	return nc != nil && nc.APIVersion == Shipped.GroupVersion().String()
}

// APIOf names the API nc was read from, for messages.
func APIOf(nc *konfluxv1alpha1.NudgeConfig) string {
	if IsShipped(nc) {
		return Shipped.GroupVersion().String()
	}
	return Own.GroupVersion().String()
}

// Get returns the namespace's NudgeConfig in nudgeflow's shape (nil when it has
// none): the shipped kind's when the namespace has one, else nudgeflow's own. The
// result's TypeMeta names the kind it was read from (owner references of automatic
// ChangeGroups point at it). A kind the cluster does not serve counts as absent.
//
// A shipped NudgeConfig whose batching annotation cannot be read is returned
// without batching and with the problem as a *BatchingError (errors.As): its edges
// are still nudged, one build at a time.
func Get(ctx context.Context, r ctrlclient.Reader, namespace string) (*konfluxv1alpha1.NudgeConfig, error) {
	key := types.NamespacedName{Namespace: namespace, Name: Name}
	if served(Shipped) {
		var shipped mirrorv1beta2.NudgeConfig
		err := r.Get(ctx, key, &shipped)
		switch {
		case err == nil:
			nc, berr := FromShipped(&shipped)
			if berr != nil {
				return nc, berr
			}
			return nc, nil
		case meta.IsNoMatchError(err):
			notServed(Shipped)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading NudgeConfig %s (%s): %w", key, Shipped.GroupVersion(), err)
		}
	}
	if !served(Own) {
		return nil, nil
	}
	var own konfluxv1alpha1.NudgeConfig
	err := r.Get(ctx, key, &own)
	switch {
	case err == nil:
		own.SetGroupVersionKind(Own)
		return &own, nil
	case meta.IsNoMatchError(err):
		notServed(Own)
		return nil, nil
	case apierrors.IsNotFound(err):
		return nil, nil
	}
	return nil, fmt.Errorf("reading NudgeConfig %s (%s): %w", key, Own.GroupVersion(), err)
}

// BatchingError says why a shipped NudgeConfig's batching annotation was ignored.
type BatchingError struct {
	Namespace string
	Err       error
}

func (e *BatchingError) Error() string {
	return fmt.Sprintf("NudgeConfig %s/%s: annotation %s ignored (its targets are nudged build by build): %v",
		e.Namespace, Name, AnnotationBatching, e.Err)
}

func (e *BatchingError) Unwrap() error { return e.Err }

// IgnoreBatchingError drops a *BatchingError: for readers that only need edges.
func IgnoreBatchingError(err error) error {
	var b *BatchingError
	if errors.As(err, &b) {
		return nil
	}
	return err
}

// FromShipped is a shipped NudgeConfig in nudgeflow's shape: the same edges, modes
// and gating groups (a validated edge may have none there; see docs/nudgeconfig.md, the gating
// rule), batching from AnnotationBatching, metadata and status as read.
func FromShipped(in *mirrorv1beta2.NudgeConfig) (*konfluxv1alpha1.NudgeConfig, error) {
	out := &konfluxv1alpha1.NudgeConfig{ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.SetGroupVersionKind(Shipped)
	for _, n := range in.Spec.Nudges {
		out.Spec.Nudges = append(out.Spec.Nudges, konfluxv1alpha1.NudgeRelationship{
			From: n.From, To: n.To, Mode: konfluxv1alpha1.NudgeMode(n.Mode), GatingGroup: n.GatingGroup,
		})
	}
	out.Status.Conditions = append(out.Status.Conditions, in.Status.Conditions...)
	out.Status.LastValidationTime = in.Status.LastValidationTime.DeepCopy()
	raw, ok := in.Annotations[AnnotationBatching]
	if !ok || strings.TrimSpace(raw) == "" {
		return out, nil
	}
	policies, err := parseBatching(raw)
	if err != nil {
		return out, &BatchingError{Namespace: in.Namespace, Err: err}
	}
	out.Spec.Batching = policies
	return out, nil
}

// parseBatching reads AnnotationBatching: a JSON list of batching policies, each
// checked as the konflux-ci.dev CRD's schema checks spec.batching.
func parseBatching(raw string) ([]konfluxv1alpha1.BatchingPolicy, error) {
	var policies []konfluxv1alpha1.BatchingPolicy
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&policies); err != nil {
		return nil, fmt.Errorf(`want a JSON list such as [{"target":"bundle","window":"30m","maxWait":"24h"}]: %w`, err)
	}
	seen := map[string]bool{}
	for i, p := range policies {
		if err := checkPolicy(p); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		if seen[p.Target] {
			return nil, fmt.Errorf("entry %d: target %s has two policies", i, p.Target)
		}
		seen[p.Target] = true
	}
	return policies, nil
}

func checkPolicy(p konfluxv1alpha1.BatchingPolicy) error {
	if p.Target == "" {
		return errors.New("target is required")
	}
	switch p.Release {
	case "", konfluxv1alpha1.ReleaseWindow, konfluxv1alpha1.ReleaseAll, konfluxv1alpha1.ReleaseQuorum:
	default:
		return fmt.Errorf("release %q: want window, quorum or all", p.Release)
	}
	if p.Release == konfluxv1alpha1.ReleaseQuorum && p.Quorum == nil {
		return fmt.Errorf("batching of %s has release quorum and needs quorum", p.Target)
	}
	if p.Quorum != nil && (p.Release != konfluxv1alpha1.ReleaseQuorum || *p.Quorum < 1) {
		return fmt.Errorf("batching of %s: quorum needs release: quorum and must be at least 1", p.Target)
	}
	if p.Window != nil && p.MaxWait != nil && p.Window.Duration > p.MaxWait.Duration {
		return fmt.Errorf("batching of %s: window %s is longer than maxWait %s", p.Target, p.Window.Duration, p.MaxWait.Duration)
	}
	return nil
}

// ToShipped converts nudgeflow's shape to integration-service's within
// defaultShippedLimit (tests and callers without a cluster; `nudgeflow migrate`
// uses ToShippedWithin and the served CRD's limit).
func ToShipped(in *konfluxv1alpha1.NudgeConfig) (*mirrorv1beta2.NudgeConfig, error) {
	return ToShippedWithin(in, defaultShippedLimit)
}

// ToShippedWithin converts nudgeflow's shape to integration-service's. Batching
// moves to AnnotationBatching. It refuses what the shipped kind cannot hold (more
// than limit.Max edges; the zero Limit is DefaultShippedLimit) instead of dropping
// any of it.
func ToShippedWithin(in *konfluxv1alpha1.NudgeConfig, limit Limit) (*mirrorv1beta2.NudgeConfig, error) {
	if limit.Max <= 0 {
		limit = defaultShippedLimit
	}
	if len(in.Spec.Nudges) > limit.Max {
		return nil, fmt.Errorf("NudgeConfig %s/%s has %d edges; integration-service's NudgeConfig (%s) holds at most %d (%s): split the namespace or keep nudgeflow's own kind",
			in.Namespace, in.Name, len(in.Spec.Nudges), Shipped.GroupVersion(), limit.Max, limit.From)
	}
	out := &mirrorv1beta2.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: in.Namespace,
		Labels: copyMap(in.Labels), Annotations: copyMap(in.Annotations)}}
	out.SetGroupVersionKind(Shipped)
	for _, n := range in.Spec.Nudges {
		out.Spec.Nudges = append(out.Spec.Nudges, mirrorv1beta2.NudgeRelationship{
			From: n.From, To: n.To, Mode: mirrorv1beta2.NudgeModeType(n.Mode), GatingGroup: n.GatingGroup,
		})
	}
	if len(in.Spec.Batching) > 0 {
		raw, err := json.Marshal(in.Spec.Batching)
		if err != nil {
			return nil, fmt.Errorf("encoding the batching policies: %w", err)
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[AnnotationBatching] = string(raw)
	}
	return out, nil
}

// toOwn converts integration-service's shape to nudgeflow's: the inverse of
// ToShipped (batching comes back from the annotation, which is then dropped).
func toOwn(in *mirrorv1beta2.NudgeConfig) (*konfluxv1alpha1.NudgeConfig, error) {
	nc, err := FromShipped(in)
	if err != nil {
		return nil, err
	}
	out := &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: in.Namespace,
		Labels: copyMap(in.Labels), Annotations: copyMap(in.Annotations)}, Spec: nc.Spec}
	delete(out.Annotations, AnnotationBatching)
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	out.SetGroupVersionKind(Own)
	return out, nil
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// A kind the API server does not serve is asked about again after notServedFor,
// so a CRD installed later is picked up without a restart, while a cluster without
// it is not asked on every read (a RESTMapper miss goes to discovery).
const notServedFor = time.Minute

// The memo is per process: a process talks to one cluster.
var (
	unservedMu sync.Mutex
	unserved   = map[schema.GroupVersionKind]time.Time{}
)

func served(gvk schema.GroupVersionKind) bool {
	unservedMu.Lock()
	defer unservedMu.Unlock()
	until, ok := unserved[gvk]
	if ok && time.Now().After(until) {
		delete(unserved, gvk)
		return true
	}
	return !ok
}

func notServed(gvk schema.GroupVersionKind) {
	unservedMu.Lock()
	defer unservedMu.Unlock()
	unserved[gvk] = time.Now().Add(notServedFor)
}

// Served reports which of the two kinds the API server serves (for watches, which
// a manager cannot start on a kind that is not served).
func Served(mapper meta.RESTMapper) (shipped, own bool, err error) {
	check := func(gvk schema.GroupVersionKind) (bool, error) {
		_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("asking the API server whether it serves %s: %w", gvk, err)
		}
		return true, nil
	}
	if shipped, err = check(Shipped); err != nil {
		return false, false, err
	}
	own, err = check(Own)
	return shipped, own, err
}

// GroupsHolding names, sorted, the ComponentGroups that list component as a member:
// the groups whose Snapshots hold its builds, so the candidates for the gatingGroup
// of a validated edge from it. Nested groups (members of another kind) do not count.
func GroupsHolding(groups []mirrorv1beta2.ComponentGroup, component string) []string {
	var out []string
	for _, g := range groups {
		if slices.ContainsFunc(g.Spec.Components, func(m mirrorv1beta2.ComponentGroupMember) bool {
			return m.Name == component && (m.Kind == "" || m.Kind == "Component")
		}) {
			out = append(out, g.Name)
		}
	}
	slices.Sort(out)
	return out
}
