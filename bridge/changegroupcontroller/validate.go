package changegroupcontroller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/components"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
)

// Validator rejects a ChangeGroup that would compete with an active one: the same
// nudged component with overlapping members would hold the same nudges twice.
//
// It answers from the informer cache in O(groups of the bundle): the Index lists a
// bundle's groups (with those this process admitted a moment ago), and Components
// are read from the cache, with a live read only for a name the cache does not have
// (a Component created a moment ago must not be refused).
//
// Manual groups take precedence over automatic ones (batching): a manual group is
// not refused for an open automatic group; the bridge then takes the overlapping
// members out of the automatic group, which hands their builds over (see
// Reconciler.takeOver). An automatic group is refused for any collecting group it
// overlaps, and the check and the Index's record happen under one lock, so two
// builds racing to open a batch in this process open one group.
type Validator struct {
	Index     *grouplookup.Index
	Cache     ctrlclient.Reader
	APIReader ctrlclient.Reader

	mu sync.Mutex
}

// +kubebuilder:webhook:path=/validate-appstudio-redhat-com-v1alpha1-changegroup,mutating=false,failurePolicy=fail,sideEffects=None,groups=appstudio.redhat.com,resources=changegroups,verbs=create;update,versions=v1alpha1,name=vchangegroup.nudgeflow.konflux-ci.dev,admissionReviewVersions=v1

// ValidateCreate checks a new group.
func (v *Validator) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	cg := obj.(*appstudiov1alpha1.ChangeGroup)
	if err := v.exist(ctx, cg, nil); err != nil {
		return nil, err
	}
	return nil, v.validateAndAdmit(ctx, cg)
}

// validateAndAdmit checks overlaps and records the admitted group atomically.
func (v *Validator) validateAndAdmit(ctx context.Context, cg *appstudiov1alpha1.ChangeGroup) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.validate(ctx, cg); err != nil {
		return err
	}
	v.admitted(ctx, cg)
	return nil
}

// ValidateUpdate checks an edited spec (members may have been added). Metadata
// writes (the bridge's finalizer, override annotations) pass without work: a member
// deleted after the group was created must not block them.
func (v *Validator) ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	cg := newObj.(*appstudiov1alpha1.ChangeGroup)
	old := oldObj.(*appstudiov1alpha1.ChangeGroup)
	if !cg.DeletionTimestamp.IsZero() || equality.Semantic.DeepEqual(old.Spec, cg.Spec) {
		return nil, nil
	}
	if err := v.exist(ctx, cg, old); err != nil {
		return nil, err
	}
	return nil, v.validateAndAdmit(ctx, cg)
}

// admitted tells the Index about a group the API server will store: not after a
// dry run (kubectl --dry-run=server), which stores nothing — the Index would hold a
// group that never exists for a minute, and intercept its nudges.
func (v *Validator) admitted(ctx context.Context, cg *appstudiov1alpha1.ChangeGroup) {
	if req, err := admission.RequestFromContext(ctx); err == nil && req.DryRun != nil && *req.DryRun {
		return
	}
	v.Index.Admitted(cg)
}

// exist rejects a group naming components that do not exist: it would wait for a
// build that can never come. On update only what the update adds is checked.
func (v *Validator) exist(ctx context.Context, cg, old *appstudiov1alpha1.ChangeGroup) error {
	var problems []string
	if old == nil || old.Spec.NudgedComponent != cg.Spec.NudgedComponent {
		missing, err := v.missing(ctx, cg.Namespace, []string{cg.Spec.NudgedComponent})
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("nudgedComponent %q does not exist in namespace %s", cg.Spec.NudgedComponent, cg.Namespace))
		}
	}
	var had []string
	if old != nil {
		had = members(old)
	}
	var added []string
	for _, m := range members(cg) {
		if !slices.Contains(had, m) {
			added = append(added, m)
		}
	}
	missing, err := v.missing(ctx, cg.Namespace, added)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("nudgingComponents names components that do not exist in namespace %s: %s",
			cg.Namespace, strings.Join(missing, ", ")))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s; create them first, or leave them out of the group", strings.Join(problems, "; "))
}

// missing returns the names that are not Components in the namespace.
func (v *Validator) missing(ctx context.Context, namespace string, names []string) ([]string, error) {
	var out []string
	for _, name := range names {
		// Either Component kind (internal/components).
		var c mirrorv1alpha1.Component
		err := components.Get(ctx, v.Cache, namespace, name, &c)
		if apierrors.IsNotFound(err) {
			err = components.Get(ctx, v.APIReader, namespace, name, &c) // created a moment ago?
		}
		if apierrors.IsNotFound(err) {
			out = append(out, name)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("checking that component %q exists: %w", name, err)
		}
	}
	return out, nil
}

// ValidateDelete allows deletion.
func (v *Validator) ValidateDelete(context.Context, runtime.Object) (admission.Warnings, error) {
	return nil, nil
}

func members(cg *appstudiov1alpha1.ChangeGroup) []string {
	names := make([]string, 0, len(cg.Spec.NudgingComponents))
	for _, r := range cg.Spec.NudgingComponents {
		names = append(names, r.Name)
	}
	return names
}

// stillCollecting reads a cached group past the cache: gone, being deleted or
// ended means it no longer competes. A group admitted here a moment ago is not
// second-guessed (it may not be stored yet; the Index already read it live when
// it could): two racing creates must not both pass.
func (v *Validator) stillCollecting(ctx context.Context, other *appstudiov1alpha1.ChangeGroup) (bool, error) {
	if v.APIReader == nil || v.Index.Admitting(other) {
		return true, nil
	}
	var live appstudiov1alpha1.ChangeGroup
	err := v.APIReader.Get(ctx, ctrlclient.ObjectKeyFromObject(other), &live)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("checking ChangeGroup %q: %w", other.Name, err)
	}
	return grouplookup.Collecting(&live), nil
}

func (v *Validator) validate(ctx context.Context, cg *appstudiov1alpha1.ChangeGroup) error {
	mine := members(cg)
	if slices.Contains(mine, cg.Spec.NudgedComponent) {
		return fmt.Errorf("nudgingComponents lists %q, the nudged component itself: a component cannot nudge itself", cg.Spec.NudgedComponent)
	}
	groups, err := v.Index.Groups(ctx, cg.Namespace, cg.Spec.NudgedComponent)
	if err != nil {
		return fmt.Errorf("checking other ChangeGroups: %w", err)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Name < groups[j].Name })
	for i := range groups {
		other := &groups[i]
		if other.Name == cg.Name || other.Spec.NudgedComponent != cg.Spec.NudgedComponent || !grouplookup.Collecting(other) {
			continue
		}
		if !grouplookup.IsAutomatic(cg) && grouplookup.IsAutomatic(other) {
			continue // a manual group takes over from an automatic one
		}
		theirs := members(other)
		var overlap []string
		switch {
		case len(mine) == 0 || len(theirs) == 0:
			overlap = []string{"all components that nudge " + cg.Spec.NudgedComponent}
		default:
			for _, m := range mine {
				if slices.Contains(theirs, m) {
					overlap = append(overlap, m)
				}
			}
		}
		if len(overlap) > 0 {
			// Refusing on the cache alone would refuse a group a person creates right
			// after the last one completed or was deleted (the cache lags by a
			// moment): a refusal is confirmed on the API server's copy.
			live, err := v.stillCollecting(ctx, other)
			if err != nil {
				return err
			}
			if !live {
				continue
			}
		}
		if len(overlap) > 0 && grouplookup.IsAutomatic(cg) {
			return fmt.Errorf("automatic ChangeGroup for %s overlaps ChangeGroup %q, which already collects %s: its builds join that group",
				cg.Spec.NudgedComponent, other.Name, strings.Join(overlap, ", "))
		}
		if len(overlap) > 0 {
			return fmt.Errorf("ChangeGroup %q is already active for %s and collects %s; wait until it completes, cancel it, or leave those components out of this group",
				other.Name, cg.Spec.NudgedComponent, strings.Join(overlap, ", "))
		}
	}
	return nil
}
