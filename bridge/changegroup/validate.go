package changegroup

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/changegroups"
)

// Validator rejects a ChangeGroup that would compete with an active one: the same
// nudged component with overlapping members would hold the same nudges twice.
type Validator struct {
	Reader ctrlclient.Reader
}

// +kubebuilder:webhook:path=/validate-appstudio-redhat-com-v1alpha1-changegroup,mutating=false,failurePolicy=fail,sideEffects=None,groups=appstudio.redhat.com,resources=changegroups,verbs=create;update,versions=v1alpha1,name=vchangegroup.nudgeflow.konflux-ci.dev,admissionReviewVersions=v1

// ValidateCreate checks a new group.
func (v *Validator) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	return nil, v.validate(ctx, obj.(*appstudiov1alpha1.ChangeGroup))
}

// ValidateUpdate checks an edited group (members may have been added).
func (v *Validator) ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	cg := newObj.(*appstudiov1alpha1.ChangeGroup)
	if !cg.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return nil, v.validate(ctx, cg)
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

func (v *Validator) validate(ctx context.Context, cg *appstudiov1alpha1.ChangeGroup) error {
	mine := members(cg)
	if slices.Contains(mine, cg.Spec.NudgedComponent) {
		return fmt.Errorf("nudgingComponents lists %q, the nudged component itself: a component cannot nudge itself", cg.Spec.NudgedComponent)
	}
	var list appstudiov1alpha1.ChangeGroupList
	if err := v.Reader.List(ctx, &list, ctrlclient.InNamespace(cg.Namespace)); err != nil {
		return fmt.Errorf("checking other ChangeGroups: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	for i := range list.Items {
		other := &list.Items[i]
		if other.Name == cg.Name || other.Spec.NudgedComponent != cg.Spec.NudgedComponent || !changegroups.IsActive(other) {
			continue
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
			return fmt.Errorf("ChangeGroup %q is already active for %s and collects %s; wait until it completes, cancel it, or leave those components out of this group",
				other.Name, cg.Spec.NudgedComponent, strings.Join(overlap, ", "))
		}
	}
	return nil
}
