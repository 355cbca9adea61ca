// Package changegroupcr is the ChangeGroup workflow's Kubernetes side: it resolves
// what the group needs from the cluster (the nudged repository, file patterns,
// each nudging component's image and original digest) and writes the CR status,
// the projection of the workflow's state.
package changegroupcr

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupcrapi"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/components"
	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
)

// What the ChangeGroup activities do, verb by verb (live reads: no watch): read the
// group and patch its spec (fillSpec), update its status, read and list Components,
// read the namespace's NudgeConfig and Renovate ConfigMap tier by name, create Events.
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=changegroups,verbs=get;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=changegroups/status,verbs=update
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=components,verbs=get;list
// +kubebuilder:rbac:groups=konflux-ci.dev,resources=components,verbs=get
// +kubebuilder:rbac:groups=konflux-ci.dev,resources=nudgeconfigs,verbs=get
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=nudgeconfigs,verbs=get
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get
// +kubebuilder:rbac:groups="",resources=events,verbs=create

// Activities reads and writes the cluster for the ChangeGroup workflow.
type Activities struct {
	Kube ctrlclient.Client
	// Ownership says whether the group's namespace owns the nudged component's
	// repository; nil: a checker of Kube, without the cluster admin's bindings.
	Ownership *ownership.Checker

	ownership ownership.Lazy
}

// owner is the ownership checker, made once (it keeps an index of claims).
func (a *Activities) owner() *ownership.Checker {
	return a.ownership.Get(a.Ownership, func() *ownership.Checker { return &ownership.Checker{Reader: a.Kube, Events: a.Kube} })
}

// Register adds the activities under their stable names.
func (a *Activities) Register(r sdkworker.Registry) {
	r.RegisterActivityWithOptions(a.Resolve, activity.RegisterOptions{Name: changegroupcrapi.ResolveActivity})
	r.RegisterActivityWithOptions(a.WriteStatus, activity.RegisterOptions{Name: changegroupcrapi.WriteStatusActivity})
	r.RegisterActivityWithOptions(a.RecordEvent, activity.RegisterOptions{Name: changegroupcrapi.EventActivity})
}

// errGone marks a group that no longer exists (or was re-created under a new UID).
var errGone = errors.New("the ChangeGroup no longer exists")

func (a *Activities) group(ctx context.Context, ns, name, uid string) (*appstudiov1alpha1.ChangeGroup, error) {
	var cg appstudiov1alpha1.ChangeGroup
	if err := a.Kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &cg); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, errGone
		}
		return nil, fmt.Errorf("reading ChangeGroup %s/%s: %w", ns, name, err)
	}
	if uid != "" && string(cg.UID) != uid {
		return nil, errGone
	}
	return &cg, nil
}

// Resolve gathers what the workflow needs. A missing nudged component or group is a
// non-retryable error: waiting will not make it appear.
func (a *Activities) Resolve(ctx context.Context, req changegroupcrapi.ResolveRequest) (changegroupcrapi.Resolved, error) {
	cg, err := a.group(ctx, req.Namespace, req.Name, req.UID)
	if errors.Is(err, errGone) {
		return changegroupcrapi.Resolved{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("ChangeGroup %s/%s no longer exists", req.Namespace, req.Name), "ChangeGroupGone", nil)
	}
	if err != nil {
		return changegroupcrapi.Resolved{}, err
	}
	nudged := cg.Spec.NudgedComponent
	var target mirrorv1alpha1.Component
	if err := components.Get(ctx, a.Kube, req.Namespace, nudged, &target); err != nil {
		if apierrors.IsNotFound(err) {
			return changegroupcrapi.Resolved{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("nudged component %q does not exist in namespace %s", nudged, req.Namespace), "ComponentNotFound", nil)
		}
		return changegroupcrapi.Resolved{}, fmt.Errorf("reading nudged component %s: %w", nudged, err)
	}
	repo, err := repoOf(&target)
	if err != nil {
		return changegroupcrapi.Resolved{}, temporal.NewNonRetryableApplicationError(err.Error(), "NoRepository", nil)
	}
	// The group writes to the target's repository: the namespace must own it. A
	// refusal ends the group before any forge call (ResolveFailed, with this
	// message), records a Warning Event on the group, and its builds are handed back.
	on := &corev1.ObjectReference{APIVersion: appstudiov1alpha1.GroupVersion.String(), Kind: "ChangeGroup",
		Namespace: cg.Namespace, Name: cg.Name, UID: cg.UID}
	if err := a.owner().Require(ctx, req.Namespace, target.Spec.Source.GitSource.URL, on); err != nil {
		if ownership.IsRefusal(err) {
			activity.GetLogger(ctx).Warn("refused: the namespace does not own the nudged component's repository", "changeGroup", cg.Name,
				"namespace", req.Namespace, "repo", repo.URL, "error", err)
		}
		return changegroupcrapi.Resolved{}, err
	}
	// The files a nudge may edit follow the same ConfigMap tiers as Renovate's nudges.
	opts, _, err := renovate.ReadTier(ctx, a.Kube, req.Namespace, &target)
	if err != nil {
		return changegroupcrapi.Resolved{}, err
	}
	fileMatch := renovate.FileMatch(opts, "")
	out := changegroupcrapi.Resolved{NudgedComponent: nudged, Repo: repo, FileMatch: fileMatch}

	names := req.Components
	if len(names) == 0 {
		for _, r := range cg.Spec.NudgingComponents {
			names = append(names, r.Name)
		}
	}
	if len(names) == 0 && len(req.Components) == 0 {
		if names, err = a.nudgersOf(ctx, req.Namespace, nudged); err != nil {
			return changegroupcrapi.Resolved{}, err
		}
		if len(names) == 0 {
			return changegroupcrapi.Resolved{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("no component nudges %q: name nudgingComponents in the ChangeGroup, or add NudgeConfig edges or build-nudges-ref", nudged),
				"NoNudgingComponents", nil)
		}
		if err := a.fillSpec(ctx, cg, names); err != nil {
			return changegroupcrapi.Resolved{}, err
		}
		out.SpecFilled = true
	}
	for _, name := range names {
		rc := changegroupcrapi.ResolvedComponent{Name: name}
		var c mirrorv1alpha1.Component
		err := components.Get(ctx, a.Kube, req.Namespace, name, &c)
		switch {
		case apierrors.IsNotFound(err):
			// Kept as a member: its build signal will carry the image.
		case err != nil:
			return changegroupcrapi.Resolved{}, fmt.Errorf("reading nudging component %s: %w", name, err)
		default:
			rc.Image, rc.Original = imageAndDigest(c.Spec.ContainerImage, c.Status.LastPromotedImage)
		}
		out.Components = append(out.Components, rc)
	}
	return out, nil
}

// nudgersOf lists the components that nudge target: NudgeConfig edges when the
// namespace has one, else build-nudges-ref (ADR 67's migration rule).
func (a *Activities) nudgersOf(ctx context.Context, ns, target string) ([]string, error) {
	nc, err := nudgeconfigs.Get(ctx, a.Kube, ns)
	err = nudgeconfigs.IgnoreBatchingError(err)
	var names []string
	switch {
	case err == nil && nc != nil:
		for _, e := range nc.Spec.Nudges {
			if e.To == target && !slices.Contains(names, e.From) {
				names = append(names, e.From)
			}
		}
	case err == nil:
		var list mirrorv1alpha1.ComponentList
		if err := a.Kube.List(ctx, &list, ctrlclient.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("listing components in %s: %w", ns, err)
		}
		for _, c := range list.Items {
			if slices.Contains(c.Spec.BuildNudgesRef, target) {
				names = append(names, c.Name)
			}
		}
	default:
		return nil, fmt.Errorf("reading NudgeConfig of %s: %w", ns, err)
	}
	sort.Strings(names)
	return names, nil
}

// fillSpec writes the computed members into the empty spec, as ADR 59 says.
func (a *Activities) fillSpec(ctx context.Context, cg *appstudiov1alpha1.ChangeGroup, names []string) error {
	patch := ctrlclient.MergeFrom(cg.DeepCopy())
	cg.Spec.NudgingComponents = nil
	for _, n := range names {
		cg.Spec.NudgingComponents = append(cg.Spec.NudgingComponents, appstudiov1alpha1.NudgingComponentRef{Name: n})
	}
	if err := a.Kube.Patch(ctx, cg, patch); err != nil {
		return fmt.Errorf("filling nudgingComponents of ChangeGroup %s/%s: %w", cg.Namespace, cg.Name, err)
	}
	return nil
}

// WriteStatus writes the workflow's projection onto the CR. A deleted (or
// re-created) group has nothing to write to; that is not an error.
func (a *Activities) WriteStatus(ctx context.Context, req changegroupcrapi.StatusRequest) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cg, err := a.group(ctx, req.Namespace, req.Name, req.UID)
		if errors.Is(err, errGone) {
			return nil
		}
		if err != nil {
			return err
		}
		next := req.Status
		conditions := cg.Status.Conditions
		for _, c := range next.Conditions {
			c.ObservedGeneration = cg.Generation
			if c.LastTransitionTime.IsZero() {
				c.LastTransitionTime = metav1.NewTime(time.Now().UTC().Truncate(time.Second))
			}
			meta.SetStatusCondition(&conditions, c)
		}
		next.Conditions = conditions
		cg.Status = next
		if err := a.Kube.Status().Update(ctx, cg); err != nil {
			return fmt.Errorf("writing status of ChangeGroup %s/%s: %w", req.Namespace, req.Name, err)
		}
		return nil
	})
}

// RecordEvent writes one Event on the group, named by the group, the reason and a
// hash of the key, so a retry (or a replay that runs the activity again) finds it
// and writes nothing. A deleted (or re-created) group gets none.
func (a *Activities) RecordEvent(ctx context.Context, req changegroupcrapi.EventRequest) error {
	if req.Type != corev1.EventTypeNormal && req.Type != corev1.EventTypeWarning {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("event type %q is neither Normal nor Warning", req.Type), "InvalidRequest", nil)
	}
	cg, err := a.group(ctx, req.Namespace, req.Name, req.UID)
	if errors.Is(err, errGone) {
		return nil
	}
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(req.Key))
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace,
			Name: fmt.Sprintf("%s.%s-%s", req.Name, strings.ToLower(req.Reason), hex.EncodeToString(sum[:8]))},
		InvolvedObject: corev1.ObjectReference{APIVersion: appstudiov1alpha1.GroupVersion.String(), Kind: "ChangeGroup",
			Namespace: req.Namespace, Name: req.Name, UID: cg.UID},
		Reason: req.Reason, Message: req.Message, Type: req.Type,
		Source:         corev1.EventSource{Component: "nudgeflow"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if err := a.Kube.Create(ctx, ev); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("recording the %s Event on ChangeGroup %s/%s: %w", req.Reason, req.Namespace, req.Name, err)
	}
	activity.GetLogger(ctx).Info("recorded an Event on the ChangeGroup", "changeGroup", req.Name, "reason", req.Reason, "type", req.Type)
	return nil
}

// repoOf derives the forge and branch from the Component's source, as build-service
// does: the git-provider annotation wins, else the URL's host.
func repoOf(c *mirrorv1alpha1.Component) (changegroupprapi.Repo, error) {
	git := c.Spec.Source.GitSource
	if git == nil || git.URL == "" {
		return changegroupprapi.Repo{}, fmt.Errorf("component %q has no spec.source.git.url: nudgeflow cannot tell which repository to update", c.Name)
	}
	u, err := url.Parse(git.URL)
	if err != nil || u.Host == "" {
		return changegroupprapi.Repo{}, fmt.Errorf("component %q has a source URL nudgeflow cannot parse: %q", c.Name, git.URL)
	}
	provider := forge.ProviderOrGitHub(c.Annotations[mirrorv1alpha1.AnnotationGitProvider], u.Hostname())
	return changegroupprapi.Repo{Provider: provider, URL: strings.TrimSuffix(git.URL, ".git"), BaseBranch: git.Revision, Namespace: c.Namespace}, nil
}

// imageAndDigest splits the last promoted image (repo@sha256:...) into the image
// repository and the digest; spec.containerImage names the repository when set.
func imageAndDigest(containerImage, lastPromoted string) (image, digest string) {
	promoted := digestref.ParseReference(lastPromoted)
	image = containerImage
	if image == "" {
		image = promoted.Repository
	}
	return image, promoted.Digest
}
