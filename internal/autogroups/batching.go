// Package autogroups opens and finds the automatic ChangeGroups of batched targets
// (ADR 67 Phase 2): a NudgeConfig's spec.batching names targets whose nudges are
// collected into one pull request instead of one per build. The first build of a
// nudger of a batched target opens an automatic ChangeGroup (<target>-batch-<generation>, labelled
// automatic, owned by the NudgeConfig, members = the target's nudgers); later builds
// join it; once it releases (or ends), the next build opens the next one.
//
// The ChangeGroup workflow does the rest (the PR, the CI hold, the window and
// maxWait, hand-backs), exactly as for a group a person created.
package autogroups

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
)

// Opener answers "which group takes this build now" for one nudge edge, opening
// the automatic group of a batched target when none collects it.
//
// Two builds racing to open a batch open one group: in one process the per-target
// lock serialises the look-and-create (the look reads live, past any cache); across
// processes (bridge replicas, the worker's validated path) both name the batch the
// same (the target's next generation, BatchName), so the API server stores one and
// refuses the other (AlreadyExists), and the loser looks again and joins the
// winner. No process's memory (an admission index, a cache) is relied on.
type Opener struct {
	// Kube creates and patches ChangeGroups.
	Kube ctrlclient.Client
	// Live lists ChangeGroups past the cache (the API server).
	Live ctrlclient.Reader

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

func (o *Opener) lock(key string) func() {
	o.mu.Lock()
	if o.locks == nil {
		o.locks = map[string]*sync.Mutex{}
	}
	l := o.locks[key]
	if l == nil {
		l = &sync.Mutex{}
		o.locks[key] = l
	}
	o.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// Holder returns the group that takes source's build for target now: a collecting
// group holding the edge (manual before automatic), else, when nc batches target,
// its open automatic group (source added to it when the NudgeConfig gained the
// edge after it opened), opened when there is none. nil: the edge is not held and
// not batched; nudge it normally.
func (o *Opener) Holder(ctx context.Context, nc *konfluxv1alpha1.NudgeConfig, source, target string) (*appstudiov1alpha1.ChangeGroup, error) {
	return o.HolderExcept(ctx, nc, source, target, "")
}

// HolderExcept is Holder ignoring the group named except: a released batch handing
// a late build to the next batch while its own status still says it collects.
func (o *Opener) HolderExcept(ctx context.Context, nc *konfluxv1alpha1.NudgeConfig, source, target, except string) (*appstudiov1alpha1.ChangeGroup, error) {
	namespace := nc.Namespace
	defer o.lock(namespace + "/" + target)()
	for attempt := 0; ; attempt++ {
		all, err := o.groups(ctx, namespace, target)
		if err != nil {
			return nil, err
		}
		groups := slices.DeleteFunc(slices.Clone(all), func(cg appstudiov1alpha1.ChangeGroup) bool { return cg.Name == except })
		if cg := Pick(groups, source, target); cg != nil {
			return cg, nil
		}
		policy := nc.Spec.BatchingFor(target)
		if policy == nil {
			return nil, nil
		}
		if auto := openAutomatic(groups); auto != nil {
			return o.join(ctx, auto, source)
		}
		cg := NewGroup(nc, policy, groups, source)
		// The batch's name is deterministic, the target's next generation: two
		// processes (bridge replicas, the worker) that both saw no open batch create
		// the same name, and the API server stores one of them. The loser's create
		// fails with AlreadyExists whatever any cache or admission index knew.
		cg.GenerateName, cg.Name = "", BatchName(target, NextGeneration(all, target))
		err = o.Kube.Create(ctx, cg)
		if err == nil {
			return cg, nil
		}
		if attempt > 0 {
			return nil, fmt.Errorf("opening the automatic ChangeGroup of %s/%s: %w", namespace, target, err)
		}
		// Refused (another process opened this generation a moment ago, or the
		// webhook refused an overlap): look again and join what is there.
	}
}

// BatchName is the name of target's automatic group of one generation:
// <target>-batch-<generation>, the target cut to 50 characters plus a hash of it
// when longer, so two targets never share names.
func BatchName(target string, generation int) string {
	return GenerateName(target) + strconv.Itoa(generation)
}

// NextGeneration is one more than the highest generation among target's
// automatic groups that exist (named by BatchName; groups named by generateName
// before generations count as none).
func NextGeneration(groups []appstudiov1alpha1.ChangeGroup, target string) int {
	prefix, highest := GenerateName(target), 0
	for _, cg := range groups {
		if cg.Spec.NudgedComponent != target || !grouplookup.IsAutomatic(&cg) {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimPrefix(cg.Name, prefix)); err == nil && strings.HasPrefix(cg.Name, prefix) && n > highest {
			highest = n
		}
	}
	return highest + 1
}

// HolderFor is HolderExcept with the namespace's NudgeConfig read live; nil (nudge
// normally) when the namespace has none.
func (o *Opener) HolderFor(ctx context.Context, namespace, source, target, except string) (*appstudiov1alpha1.ChangeGroup, error) {
	nc, err := nudgeconfigs.Get(ctx, o.Live, namespace)
	if err = nudgeconfigs.IgnoreBatchingError(err); err != nil || nc == nil {
		return nil, err
	}
	return o.HolderExcept(ctx, nc, source, target, except)
}

func (o *Opener) groups(ctx context.Context, namespace, target string) ([]appstudiov1alpha1.ChangeGroup, error) {
	var list appstudiov1alpha1.ChangeGroupList
	if err := o.Live.List(ctx, &list, ctrlclient.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing ChangeGroups of %s: %w", namespace, err)
	}
	out := list.Items[:0]
	for _, cg := range list.Items {
		if cg.Spec.NudgedComponent == target {
			out = append(out, cg)
		}
	}
	return out, nil
}

// Pick is the collecting group that holds source -> target (manual first, then the
// oldest), or nil.
func Pick(groups []appstudiov1alpha1.ChangeGroup, source, target string) *appstudiov1alpha1.ChangeGroup {
	var found []appstudiov1alpha1.ChangeGroup
	for _, cg := range groups {
		if grouplookup.Collecting(&cg) && grouplookup.Holds(&cg, source, target) {
			found = append(found, cg)
		}
	}
	if len(found) == 0 {
		return nil
	}
	return grouplookup.Preferred(found)
}

func openAutomatic(groups []appstudiov1alpha1.ChangeGroup) *appstudiov1alpha1.ChangeGroup {
	var found []appstudiov1alpha1.ChangeGroup
	for _, cg := range groups {
		if grouplookup.IsAutomatic(&cg) && grouplookup.Collecting(&cg) {
			found = append(found, cg)
		}
	}
	if len(found) == 0 {
		return nil
	}
	return grouplookup.Preferred(found)
}

// join adds source to an open automatic group that does not have it yet (the
// NudgeConfig gained the edge after the group opened).
func (o *Opener) join(ctx context.Context, cg *appstudiov1alpha1.ChangeGroup, source string) (*appstudiov1alpha1.ChangeGroup, error) {
	if grouplookup.Holds(cg, source, cg.Spec.NudgedComponent) {
		return cg, nil
	}
	patch := ctrlclient.MergeFromWithOptions(cg.DeepCopy(), ctrlclient.MergeFromWithOptimisticLock{})
	cg.Spec.NudgingComponents = append(cg.Spec.NudgingComponents, appstudiov1alpha1.NudgingComponentRef{Name: source})
	if err := o.Kube.Patch(ctx, cg, patch); err != nil {
		return nil, fmt.Errorf("adding %s to automatic ChangeGroup %s/%s: %w", source, cg.Namespace, cg.Name, err)
	}
	return cg, nil
}

// NewGroup is the automatic ChangeGroup of a batched target: every nudger of the
// target in the NudgeConfig except those a collecting manual group already holds
// (source always), the policy as spec.autoRelease, owned by the NudgeConfig.
func NewGroup(nc *konfluxv1alpha1.NudgeConfig, p *konfluxv1alpha1.BatchingPolicy, groups []appstudiov1alpha1.ChangeGroup, source string) *appstudiov1alpha1.ChangeGroup {
	held := func(m string) bool {
		return slices.ContainsFunc(groups, func(g appstudiov1alpha1.ChangeGroup) bool {
			return !grouplookup.IsAutomatic(&g) && grouplookup.Collecting(&g) &&
				(len(g.Spec.NudgingComponents) == 0 || grouplookup.Holds(&g, m, p.Target))
		})
	}
	cg := &appstudiov1alpha1.ChangeGroup{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: GenerateName(p.Target),
			Namespace:    nc.Namespace,
			Labels:       map[string]string{grouplookup.LabelAutomatic: "true", grouplookup.LabelBatchTarget: p.Target},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: nudgeconfigs.APIOf(nc), Kind: "NudgeConfig", Name: nc.Name, UID: nc.UID,
				BlockOwnerDeletion: ptr.To(false),
			}},
		},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: p.Target, AutoRelease: AutoReleaseOf(p)},
	}
	members := []string{source}
	for _, m := range nc.Spec.NudgersOf(p.Target) {
		if m != source && !held(m) {
			members = append(members, m)
		}
	}
	slices.Sort(members)
	for _, m := range members {
		cg.Spec.NudgingComponents = append(cg.Spec.NudgingComponents, appstudiov1alpha1.NudgingComponentRef{Name: m})
	}
	return cg
}

// GenerateName prefixes the automatic groups of target.
func GenerateName(target string) string {
	if len(target) > 50 {
		sum := sha256.Sum256([]byte(target))
		target = target[:41] + "-" + hex.EncodeToString(sum[:4])
	}
	return target + "-batch-"
}

// AutoReleaseOf turns a batching policy into the ChangeGroup's spec.autoRelease,
// defaults applied (window 30m, maxWait 24h, release window).
func AutoReleaseOf(p *konfluxv1alpha1.BatchingPolicy) *appstudiov1alpha1.AutoRelease {
	a := &appstudiov1alpha1.AutoRelease{Policy: appstudiov1alpha1.AutoReleasePolicy(p.EffectiveRelease()), Quorum: p.Quorum}
	a.Window, a.MaxWait = p.Window, p.MaxWait
	if a.Window == nil {
		a.Window = mustDuration(konfluxv1alpha1.DefaultBatchWindow)
	}
	if a.MaxWait == nil {
		a.MaxWait = mustDuration(konfluxv1alpha1.DefaultBatchMaxWait)
	}
	return a
}

func mustDuration(s string) *metav1.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return &metav1.Duration{Duration: d}
}
