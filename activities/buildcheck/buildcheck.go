// Package buildcheck verifies a build when it enters a workflow: whoever can reach
// Temporal can signal a ChangeGroup, start a Nudge or signal a ValidatedNudge or a
// PRGroup with any digest, so before a workflow keeps a build it asks the cluster
// whether that component's build in that namespace really produced it. The
// evidence, cheapest first: the build PipelineRun the build names (one GET: its
// IMAGE_DIGEST and IMAGE_URL results and its component label), else the
// Component's image (one GET: status.lastPromotedImage or spec.containerImage),
// else a Snapshot of the namespace naming that component with that image (a paged
// LIST, only when both failed). The workflow records the verdict in its state and
// never asks again, so a build whose run was pruned later stays kept; a refused
// build is written nowhere, and a Warning Event with reason EventReason says which
// digest was refused and why.
package buildcheck

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/components"
	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// ActivityName is the registered name of Activities.VerifyBuild, which workflows
// call by method value; never rename the method (histories replay by name).
const ActivityName = "VerifyBuild"

// EventReason is the reason of the Warning Event a refused build leaves.
const EventReason = "BuildNotVerified"

// Sources of a verdict: what proved the build.
const (
	SourceBuildRun       = "build-pipelinerun"
	SourceComponentImage = "component-image"
	SourceSnapshot       = "snapshot"
	sourceChangeGroup    = "changegroup"
)

// Subject is the object a refusal's Event is recorded on: the nudged Component of
// a Nudge, ValidatedNudge or PRGroup, or the ChangeGroup.
type Subject struct {
	// Kind is "Component" or "ChangeGroup"; Name its name in the request's
	// namespace; UID, when known, the ChangeGroup's (a Component's is read).
	Kind string `json:"kind"`
	Name string `json:"name"`
	UID  string `json:"uid,omitempty"`
}

// Subject kinds.
const (
	KindComponent   = "Component"
	KindChangeGroup = "ChangeGroup"
)

// Request is one build as a workflow received it. No secrets.
type Request struct {
	// Namespace is the workflow's own namespace: every read happens there.
	Namespace string `json:"namespace"`
	// ClaimedNamespace is the namespace the build names, when the signal names one:
	// it must be Namespace.
	ClaimedNamespace string `json:"claimedNamespace,omitempty"`
	// Component is the component the build claims to be of.
	Component string `json:"component"`
	// Build is the build claimed. Its Digest is checked, and its Image, PullSpec
	// and ImageURL when it carries them (the repository pinned is as much the
	// writer's output as the digest); its run's UID and its start (the order
	// builds are kept in) when it names the run.
	imagebuild.Build
	// HandedBackBy names the ChangeGroup that handed the build back, when it did:
	// the group verified the build when it collected it, and its CR's status
	// (which only nudgeflow writes) still names the digest after the pruner
	// deleted the build run.
	HandedBackBy string `json:"handedBackBy,omitempty"`
	// Workflow names the workflow that asks (in the Event's message).
	Workflow string `json:"workflow"`
	// Subject gets the Event when the build is refused.
	Subject Subject `json:"subject"`
}

// Verdict is the answer, recorded in the workflow's state.
type Verdict struct {
	Verified bool `json:"verified"`
	// Source is one of the Source* values when verified.
	Source string `json:"source,omitempty"`
	// Evidence names the object that proved it (a PipelineRun, the Component, a
	// Snapshot).
	Evidence string `json:"evidence,omitempty"`
	// Reason says why a build was refused.
	Reason string `json:"reason,omitempty"`
}

// String is the verdict in a person's words.
func (v Verdict) String() string {
	if v.Verified {
		return fmt.Sprintf("verified by %s %s", v.Source, v.Evidence)
	}
	return "refused: " + v.Reason
}

// Options are the activity options of a verification in a workflow that may wait
// for it (a Nudge, a ValidatedNudge, a PRGroup): it is retried until the cluster
// answers, never given up, so a build is neither kept unverified nor lost.
func Options(summary string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 5 * time.Minute,
			NonRetryableErrorTypes: []string{errorInvalidRequest}},
	}
}

// errorInvalidRequest is the type of the error a request without a namespace
// fails with: a bug of the caller, not worth retrying.
const errorInvalidRequest = "InvalidRequest"

// Activities reads the cluster.
type Activities struct {
	// Kube is an uncached client: a verification is one GET (lists only on the
	// last fallback), never a watch.
	Kube ctrlclient.Client
	// SnapshotPage is the page size of the Snapshot list (zero: 100).
	SnapshotPage int64
}

// Register adds the activity under ActivityName.
func (a *Activities) Register(r sdkworker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.VerifyBuild, activity.RegisterOptions{Name: ActivityName})
}

// The worker reads build runs, Components and Snapshots in tenant namespaces and
// records the refusal's Event; nothing else.
// +kubebuilder:rbac:groups=tekton.dev,resources=pipelineruns,verbs=get
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=components,verbs=get
// +kubebuilder:rbac:groups=konflux-ci.dev,resources=components,verbs=get
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=snapshots,verbs=list
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=changegroups,verbs=get
// +kubebuilder:rbac:groups="",resources=events,verbs=create

// VerifyBuild answers whether the cluster built req's digest for req's component
// in req's namespace, and records a Warning Event when it did not. It fails (to
// be retried) only when the cluster cannot be read; a refusal is a verdict.
func (a *Activities) VerifyBuild(ctx context.Context, req Request) (Verdict, error) {
	if req.Namespace == "" {
		return Verdict{}, temporal.NewNonRetryableApplicationError("a build is verified in the workflow's namespace: none given", errorInvalidRequest, nil)
	}
	v, err := a.verify(ctx, req)
	if err != nil {
		return Verdict{}, err
	}
	log := activity.GetLogger(ctx)
	if v.Verified {
		log.Info("build verified", "namespace", req.Namespace, "component", req.Component, "digest", req.Digest,
			"source", v.Source, "evidence", v.Evidence, "workflow", req.Workflow)
		return v, nil
	}
	log.Warn("build refused: the cluster did not build it", "namespace", req.Namespace, "component", req.Component,
		"digest", req.Digest, "reason", v.Reason, "workflow", req.Workflow)
	if err := a.recordRefusal(ctx, req, v); err != nil {
		return Verdict{}, err
	}
	return v, nil
}

func refused(format string, args ...any) Verdict {
	return Verdict{Reason: fmt.Sprintf(format, args...)}
}

// verify checks the claim itself, then the three sources in turn.
func (a *Activities) verify(ctx context.Context, req Request) (Verdict, error) {
	if req.Component == "" {
		return refused("the build names no component"), nil
	}
	if req.ClaimedNamespace != "" && req.ClaimedNamespace != req.Namespace {
		return refused("the build names namespace %q, not the workflow's %q", req.ClaimedNamespace, req.Namespace), nil
	}
	if !digestref.ValidDigest(req.Digest) {
		return refused("%q is not a sha256 digest", req.Digest), nil
	}
	repo, why := claimedRepository(req)
	if why != "" {
		return refused("%s", why), nil
	}
	var misses []string
	if req.BuildPipelineRun != "" {
		v, miss, err := a.byBuildRun(ctx, req, repo)
		if err != nil || v != nil {
			return deref(v), err
		}
		misses = append(misses, miss)
	}
	v, miss, err := a.byComponent(ctx, req, repo)
	if err != nil || v != nil {
		return deref(v), err
	}
	misses = append(misses, miss)
	v, miss, err = a.bySnapshot(ctx, req, repo)
	if err != nil || v != nil {
		return deref(v), err
	}
	misses = append(misses, miss)
	if req.HandedBackBy != "" {
		v, miss, err = a.byChangeGroup(ctx, req, repo)
		if err != nil || v != nil {
			return deref(v), err
		}
		misses = append(misses, miss)
	}
	return refused("no build of %s in %s produced %s: %s", req.Component, req.Namespace, req.Digest, strings.Join(misses, "; ")), nil
}

func deref(v *Verdict) Verdict {
	if v == nil {
		return Verdict{}
	}
	return *v
}

// claimedRepository is the image repository the build would pin ("" when it names
// none: the writer then uses the Component's), or why the claim contradicts itself.
func claimedRepository(req Request) (string, string) {
	var repo string
	if req.PullSpec != "" {
		ref := digestref.ParseReference(req.PullSpec)
		if ref.Digest != req.Digest {
			return "", fmt.Sprintf("pull spec %q does not pin digest %s", req.PullSpec, req.Digest)
		}
		repo = ref.Repository
	}
	if req.ImageURL != "" {
		r := digestref.Repository(req.ImageURL)
		if repo != "" && r != repo {
			return "", fmt.Sprintf("image URL %q and pull spec %q name different repositories", req.ImageURL, req.PullSpec)
		}
		repo = r
	}
	if req.Image != "" {
		if repo != "" && req.Image != repo {
			return "", fmt.Sprintf("image %q is not the repository its pull spec or image URL names (%q)", req.Image, repo)
		}
		repo = req.Image
	}
	if repo != "" && !digestref.ValidImage(repo) {
		return "", fmt.Sprintf("%q is not an image repository", repo)
	}
	return repo, ""
}

// sameRepository: the claim names no repository, or the one the evidence names.
func sameRepository(claimed, evidence string) bool {
	return claimed == "" || claimed == digestref.Repository(evidence)
}

// byBuildRun reads the build PipelineRun the build names. A run that reports the
// digest for the component proves it, provided the rest of the claim (its UID,
// its start, its repository) matches: a real digest claimed with a later start
// would replace a newer build. A run that is gone, failed or reports another
// digest proves nothing either way: the other sources decide.
func (a *Activities) byBuildRun(ctx context.Context, req Request, repo string) (*Verdict, string, error) {
	var plr tektonv1.PipelineRun
	err := a.Kube.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: req.BuildPipelineRun}, &plr)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Sprintf("build PipelineRun %s does not exist (any more)", req.BuildPipelineRun), nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading build PipelineRun %s/%s: %w", req.Namespace, req.BuildPipelineRun, err)
	}
	url, digest := konflux.BuildResults(&plr)
	switch {
	case konflux.ComponentOf(plr.Labels) != req.Component:
		return nil, fmt.Sprintf("build PipelineRun %s is of component %q", plr.Name, konflux.ComponentOf(plr.Labels)), nil
	case !plr.Status.GetCondition(apis.ConditionSucceeded).IsTrue():
		return nil, fmt.Sprintf("build PipelineRun %s did not succeed", plr.Name), nil
	case digest != req.Digest:
		return nil, fmt.Sprintf("build PipelineRun %s reports IMAGE_DIGEST %q", plr.Name, digest), nil
	}
	// The run built this digest: now the claim must describe that run.
	switch {
	case !sameRepository(repo, url):
		v := refused("build PipelineRun %s pushed %s to %s, not to %s", plr.Name, digest, digestref.Repository(url), repo)
		return &v, "", nil
	case req.BuildUID != "" && req.BuildUID != string(plr.UID):
		v := refused("build PipelineRun %s has UID %s, not %s", plr.Name, plr.UID, req.BuildUID)
		return &v, "", nil
	case !req.BuiltAt.IsZero() && !startedAt(&plr, req.BuiltAt):
		v := refused("build PipelineRun %s started at %s, not at %s (builds are ordered by their start)",
			plr.Name, runStart(&plr).UTC().Format(time.RFC3339), req.BuiltAt.UTC().Format(time.RFC3339))
		return &v, "", nil
	}
	return &Verdict{Verified: true, Source: SourceBuildRun, Evidence: plr.Name}, "", nil
}

// runStart is when a build started, as the bridge orders builds: status.startTime,
// else its creation.
func runStart(plr *tektonv1.PipelineRun) time.Time {
	if plr.Status.StartTime != nil {
		return plr.Status.StartTime.Time
	}
	return plr.CreationTimestamp.Time
}

// startedAt: t is the run's start or its creation (to the second: the API server
// keeps seconds), the times a sender orders builds by.
func startedAt(plr *tektonv1.PipelineRun, t time.Time) bool {
	t = t.Truncate(time.Second)
	if plr.Status.StartTime != nil && plr.Status.StartTime.Truncate(time.Second).Equal(t) {
		return true
	}
	return plr.CreationTimestamp.Truncate(time.Second).Equal(t)
}

// byComponent reads the Component: its last promoted image, or a containerImage
// pinned to a digest, naming the digest proves it.
func (a *Activities) byComponent(ctx context.Context, req Request, repo string) (*Verdict, string, error) {
	var c mirrorv1alpha1.Component
	err := components.Get(ctx, a.Kube, req.Namespace, req.Component, &c)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Sprintf("Component %s does not exist", req.Component), nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading Component %s/%s: %w", req.Namespace, req.Component, err)
	}
	for _, image := range []string{c.Status.LastPromotedImage, c.Spec.ContainerImage} {
		if ref := digestref.ParseReference(image); ref.Digest == req.Digest && sameRepository(repo, image) {
			return &Verdict{Verified: true, Source: SourceComponentImage, Evidence: "Component " + c.Name}, "", nil
		}
	}
	image := c.Status.LastPromotedImage
	if image == "" {
		image = "none"
	}
	return nil, fmt.Sprintf("Component %s's last promoted image is %s", c.Name, image), nil
}

// byChangeGroup finds a handed-back build in the status of the ChangeGroup that
// handed it back: the group collected only builds it had verified, and tenants
// cannot write its status. This is what keeps a build whose run was pruned while
// a group held it (and whose Component moved on, and of which no Snapshot is
// left) deliverable when the group ends without it.
func (a *Activities) byChangeGroup(ctx context.Context, req Request, repo string) (*Verdict, string, error) {
	var cg appstudiov1alpha1.ChangeGroup
	err := a.Kube.Get(ctx, ctrlclient.ObjectKey{Namespace: req.Namespace, Name: req.HandedBackBy}, &cg)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Sprintf("ChangeGroup %s does not exist", req.HandedBackBy), nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading ChangeGroup %s/%s: %w", req.Namespace, req.HandedBackBy, err)
	}
	for _, c := range cg.Status.Components {
		if c.Name == req.Component && c.NewBuild == req.Digest && (c.NewBuildPullSpec == "" || sameRepository(repo, c.NewBuildPullSpec)) {
			return &Verdict{Verified: true, Source: sourceChangeGroup, Evidence: "ChangeGroup " + cg.Name}, "", nil
		}
	}
	return nil, fmt.Sprintf("ChangeGroup %s collected no such build of %s", cg.Name, req.Component), nil
}

// bySnapshot pages through the namespace's Snapshots for one naming the component
// with the image: integration-service snapshots every push build (and pull-request
// builds), and keeps them after the build run is pruned.
func (a *Activities) bySnapshot(ctx context.Context, req Request, repo string) (*Verdict, string, error) {
	page := a.SnapshotPage
	if page <= 0 {
		page = 100
	}
	opts := []ctrlclient.ListOption{ctrlclient.InNamespace(req.Namespace), ctrlclient.Limit(page)}
	seen := 0
	for token := ""; ; {
		var list mirrorv1alpha1.SnapshotList
		if err := a.Kube.List(ctx, &list, append(opts, ctrlclient.Continue(token))...); err != nil {
			return nil, "", fmt.Errorf("listing Snapshots of %s: %w", req.Namespace, err)
		}
		for _, s := range list.Items {
			for _, sc := range s.Spec.Components {
				if sc.Name == req.Component && digestref.ParseReference(sc.ContainerImage).Digest == req.Digest && sameRepository(repo, sc.ContainerImage) {
					return &Verdict{Verified: true, Source: SourceSnapshot, Evidence: "Snapshot " + s.Name}, "", nil
				}
			}
		}
		seen += len(list.Items)
		if token = list.Continue; token == "" {
			return nil, fmt.Sprintf("none of the %d Snapshots names it", seen), nil
		}
		activity.RecordHeartbeat(ctx, seen)
	}
}

// recordRefusal writes the Warning Event on the subject, named by the subject and
// the refused build, so a retry or a redelivery of the same build finds it.
func (a *Activities) recordRefusal(ctx context.Context, req Request, v Verdict) error {
	sub := req.Subject
	if sub.Name == "" {
		sub = Subject{Kind: KindComponent, Name: req.Component}
	}
	if sub.Name == "" {
		activity.GetLogger(ctx).Warn("refused build has no object to record the Event on", "namespace", req.Namespace, "workflow", req.Workflow)
		return nil
	}
	ref := corev1.ObjectReference{Namespace: req.Namespace, Name: sub.Name, Kind: sub.Kind, UID: types.UID(sub.UID)}
	switch sub.Kind {
	case KindChangeGroup:
		ref.APIVersion = appstudiov1alpha1.GroupVersion.String()
	default:
		ref.Kind, ref.APIVersion = KindComponent, mirrorv1alpha1.GroupVersion.String()
		var c mirrorv1alpha1.Component
		err := components.Get(ctx, a.Kube, req.Namespace, sub.Name, &c)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading Component %s/%s for the %s Event: %w", req.Namespace, sub.Name, EventReason, err)
		}
		// kubectl describe finds Events by the object's UID; a Component that does
		// not exist still gets one, by name.
		ref.UID = c.UID
		if c.APIVersion != "" {
			ref.APIVersion = c.APIVersion // the kind read (either Component kind)
		}
	}
	sum := sha256.Sum256([]byte(req.Component + "@" + req.Digest + "\n" + req.Workflow))
	name := sub.Name
	if len(name) > 200 {
		name = name[:200]
	}
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace,
			Name: fmt.Sprintf("%s.%s-%s", name, strings.ToLower(EventReason), hex.EncodeToString(sum[:8]))},
		InvolvedObject: ref,
		Reason:         EventReason,
		Type:           corev1.EventTypeWarning,
		Message:        message(req, v),
		Source:         corev1.EventSource{Component: "nudgeflow"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if err := a.Kube.Create(ctx, ev); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("recording the %s Event on %s %s/%s: %w", EventReason, ref.Kind, req.Namespace, sub.Name, err)
	}
	return nil
}

// message says which build was refused, by whom and why (an Event's message is
// bounded by the API server; the reason is short).
func message(req Request, v Verdict) string {
	image := req.PullSpec
	if image == "" {
		image = req.Digest
	}
	msg := fmt.Sprintf("refused build %s of component %s (%s): %s. nudgeflow writes only digests the cluster built; "+
		"it is written nowhere", image, req.Component, req.Workflow, v.Reason)
	if len(msg) > 1000 {
		msg = msg[:1000]
	}
	return msg
}
