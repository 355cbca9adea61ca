// Package handback returns builds a ChangeGroup held but did not deliver to normal
// nudging: an immediate Nudge of each build (the same workflow ID the bridge would
// use for that build and target, so a build is never nudged twice, or, when a group
// held that Nudge's run, one per group, build and target), and one Event on
// the ChangeGroup that says what was handed back and why.
package handback

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	nudge "github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/autogroups"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// Activities starts Nudges and records Events.
type Activities struct {
	Kube     ctrlclient.Client
	Temporal client.Client
	// Batches opens the next batch of a batched target (nil: late builds of a
	// released batch are nudged instead).
	Batches *autogroups.Opener
	// HeldOutcomeWait is how long a hand-back waits for the bridge to write where
	// a held run's build went before it fails open (DefaultHeldOutcomeWait when zero).
	HeldOutcomeWait time.Duration
}

// DefaultHeldOutcomeWait bounds the wait for a held run's fate. The bridge writes
// it within seconds of the hold; it never writes it when it cannot tell the run's
// build (the build run was pruned and the Component has no lastPromotedImage), and
// then the build's own Nudge would neither nudge nor end. Past this age the
// hand-back counts the Nudge as one that may end held, and starts the group's own
// hand-back Nudge of the build: a build nudged twice at worst (the same digest:
// the second run changes nothing), never one lost.
const DefaultHeldOutcomeWait = 10 * time.Minute

func (a *Activities) heldOutcomeWait() time.Duration {
	if a.HeldOutcomeWait > 0 {
		return a.HeldOutcomeWait
	}
	return DefaultHeldOutcomeWait
}

// Register adds the activity under its stable name.
func (a *Activities) Register(r sdkworker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.HandBack, activity.RegisterOptions{Name: Activity})
}

// Live reads (no watch): the build runs and the group by name, the namespace's groups.
// +kubebuilder:rbac:groups=tekton.dev,resources=pipelineruns,verbs=get
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=changegroups,verbs=get;list
// +kubebuilder:rbac:groups="",resources=events,verbs=create

// HandBack starts an immediate Nudge of every build and records one Event. It is
// idempotent: Nudge IDs and the Event name are deterministic.
//
// Build by build: one build that cannot be handed back now (the API server or
// Temporal failed for it, the group that collects it has no workflow yet, its own
// Nudge's held run is undecided and younger than HeldOutcomeWait) does not keep
// the others back. Every build ends in exactly one of: handed over to the
// ChangeGroup that collects it now; its own Nudge (started here, or already
// running and not held, or ended without being held: that Nudge nudges it); the
// group's hand-back Nudge of it (its own Nudge was held, may end held, or is held
// undecided for longer than HeldOutcomeWait). The others are named in the error,
// and the ChangeGroup workflow runs the activity again for all of them (the ones
// done are found done: the IDs are deterministic, a group dedupes a build it got
// twice); the Event is written once every build has gone somewhere.
func (a *Activities) HandBack(ctx context.Context, req Request) (Result, error) {
	var res Result
	if req.Target == "" && len(req.Builds) > 0 {
		// A Nudge without a target would nudge nothing and look done.
		return res, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"ChangeGroup %s/%s does not know its nudged component: %d build(s) cannot be handed back", req.Namespace, req.ChangeGroup, len(req.Builds)),
			"NoTarget", nil)
	}
	taskQueue := activity.GetInfo(ctx).TaskQueue
	var failed []error
	for _, b := range req.Builds {
		if err := a.handBackOne(ctx, req, b, taskQueue, &res); err != nil {
			failed = append(failed, fmt.Errorf("%s@%s: %w", b.Component, b.Digest, err))
			activity.GetLogger(ctx).Warn("build not handed back yet; the others go on, and this one is tried again", "changeGroup", req.ChangeGroup,
				"component", b.Component, "digest", b.Digest, "error", err)
		}
	}
	if len(failed) > 0 {
		return res, fmt.Errorf("%d of %d build(s) of ChangeGroup %s/%s not handed back yet (the others were), to be tried again: %w",
			len(failed), len(req.Builds), req.Namespace, req.ChangeGroup, errors.Join(failed...))
	}
	return res, a.recordEvent(ctx, req, res)
}

// handBackOne hands one build over to the group that collects it now, or back to
// a Nudge, and adds where it went to res.
func (a *Activities) handBackOne(ctx context.Context, req Request, b Build, taskQueue string, res *Result) error {
	over, err := a.handOver(ctx, req, b)
	if err != nil {
		return err
	}
	if over != "" {
		res.HandedOver = append(res.HandedOver, fmt.Sprintf("%s@%s -> %s", b.Component, b.Digest, over))
		activity.GetLogger(ctx).Info("build handed over to the ChangeGroup that holds it now", "changeGroup", req.ChangeGroup,
			"to", over, "component", b.Component, "digest", b.Digest, "why", b.Why)
		return nil
	}
	nreq, err := a.nudgeRequest(ctx, req, b)
	if err != nil {
		return err
	}
	// A hand-back always ends in a real nudge: the build's own Nudge ID when it is
	// free, else (a group held that Nudge's run) one of this group's.
	id, err := nudge.StartHandBack(ctx, a.Temporal, taskQueue, nreq, groupKey(req), a.heldNudge)
	if err != nil {
		return fmt.Errorf("handing %s@%s back: %w", b.Component, b.Digest, err)
	}
	res.Nudges = append(res.Nudges, id)
	activity.GetLogger(ctx).Info("build handed back to normal nudging", "changeGroup", req.ChangeGroup,
		"component", b.Component, "digest", b.Digest, "why", b.Why, "nudge", id)
	return nil
}

// heldNudge is nudge.HeldProbe on the Nudge's Renovate runs. A held run whose
// fate is still undecided after HeldOutcomeWait fails open: the Nudge counts as
// one that may end held, so the group starts its own hand-back Nudge of the build
// (DefaultHeldOutcomeWait says why).
func (a *Activities) heldNudge(ctx context.Context, namespace, workflowID string) (bool, error) {
	held, err := renovate.NudgeMayEndHeld(ctx, a.Kube, namespace, workflowID)
	var undecided *renovate.UndecidedHeldRun
	if errors.As(err, &undecided) {
		if age := time.Since(undecided.Created); age >= a.heldOutcomeWait() {
			activity.GetLogger(ctx).Warn("the held run's fate is still undecided: handing the build back with a Nudge of the group's own",
				"pipelineRun", undecided.Name, "nudge", workflowID, "age", age.Round(time.Second).String(), "wait", a.heldOutcomeWait().String())
			return true, nil
		}
	}
	return held, err
}

// groupKey names the handing-back group in its hand-back Nudge IDs: its UID (a
// re-created group of the same name hands back under its own), else its name.
func groupKey(req Request) string {
	if req.UID != "" {
		return req.UID
	}
	return req.ChangeGroup
}

// handOver gives the build to another ChangeGroup that collects the edge now (a
// manual group that took the member over from an automatic one, the next batch of
// a batched target), manual groups first: that is where a new build of the member
// would go. It returns the group's name, or "" when none collects it (then the
// build is nudged). A group that collects it but whose workflow the bridge has not
// started yet (or which ended a moment ago) makes the activity fail and retry.
func (a *Activities) handOver(ctx context.Context, req Request, b Build) (string, error) {
	var list appstudiov1alpha1.ChangeGroupList
	if err := a.Kube.List(ctx, &list, ctrlclient.InNamespace(req.Namespace)); err != nil {
		return "", fmt.Errorf("listing ChangeGroups of %s: %w", req.Namespace, err)
	}
	others := list.Items[:0]
	for _, cg := range list.Items {
		if cg.Spec.NudgedComponent == req.Target && cg.Name != req.ChangeGroup {
			others = append(others, cg)
		}
	}
	cg := autogroups.Pick(others, b.Component, req.Target)
	if cg == nil && b.Next && a.Batches != nil {
		// The next batch of the target, when the NudgeConfig still batches it.
		var err error
		if cg, err = a.Batches.HolderFor(ctx, req.Namespace, b.Component, req.Target, req.ChangeGroup); err != nil {
			return "", err
		}
	}
	if cg == nil {
		return "", nil
	}
	id := WorkflowID(cg.Namespace, cg.Name, string(cg.UID))
	err := a.Temporal.SignalWorkflow(ctx, id, "", SignalComponentBuilt, b)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return "", fmt.Errorf("ChangeGroup %s collects %s but its workflow is not running (not started yet, or just ended); retrying", cg.Name, b.Component)
	}
	if err != nil {
		return "", fmt.Errorf("handing %s@%s over to ChangeGroup %s: %w", b.Component, b.Digest, cg.Name, err)
	}
	return cg.Name, nil
}

// nudgeRequest describes the build for the Nudge workflow: the build as the group
// received it. Only a build signalled before builds were carried whole is
// completed from its PipelineRun, when it still exists (konflux.CompleteLegacy).
func (a *Activities) nudgeRequest(ctx context.Context, req Request, b Build) (nudge.Request, error) {
	nb := b.Build
	if nb.Legacy() {
		var err error
		if nb, err = a.completeLegacy(ctx, req.Namespace, nb); err != nil {
			return nudge.Request{}, err
		}
	}
	if nb.BuildUID == "" {
		// No build PipelineRun is known (the digest came from the Component): the
		// digest keys the Nudge, so a redelivery still cannot nudge twice.
		nb.BuildUID = "digest-" + strings.TrimPrefix(b.Digest, "sha256:")
	}
	return nudge.Request{Namespace: req.Namespace, Nudging: b.Component, Nudged: req.Target,
		Mode: "immediate", Build: nb, HandedBackBy: req.ChangeGroup}, nil
}

// completeLegacy reads a legacy build's PipelineRun, when it names one and the run
// still exists, for konflux.CompleteLegacy.
func (a *Activities) completeLegacy(ctx context.Context, namespace string, b imagebuild.Build) (imagebuild.Build, error) {
	if b.BuildPipelineRun == "" {
		return konflux.CompleteLegacy(b, nil), nil
	}
	var plr tektonv1.PipelineRun
	err := a.Kube.Get(ctx, types.NamespacedName{Namespace: namespace, Name: b.BuildPipelineRun}, &plr)
	switch {
	case err == nil:
		return konflux.CompleteLegacy(b, &plr), nil
	case apierrors.IsNotFound(err):
		return konflux.CompleteLegacy(b, nil), nil
	default:
		return b, fmt.Errorf("reading build %s: %w", b.BuildPipelineRun, err)
	}
}

// recordEvent writes one Event on the ChangeGroup (when it still exists).
func (a *Activities) recordEvent(ctx context.Context, req Request, res Result) error {
	var cg appstudiov1alpha1.ChangeGroup
	err := a.Kube.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: req.ChangeGroup}, &cg)
	if apierrors.IsNotFound(err) || (err == nil && req.UID != "" && string(cg.UID) != req.UID) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ChangeGroup %s/%s: %w", req.Namespace, req.ChangeGroup, err)
	}
	parts := make([]string, 0, len(req.Builds))
	key := sha256.New()
	for _, b := range req.Builds {
		parts = append(parts, fmt.Sprintf("%s %s (%s)", b.Component, shortDigest(b.Digest), b.Why))
		fmt.Fprintf(key, "%s@%s\n", b.Component, b.Digest)
	}
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace,
			Name: fmt.Sprintf("%s.handback-%s", req.ChangeGroup, hex.EncodeToString(key.Sum(nil))[:16])},
		InvolvedObject: corev1.ObjectReference{APIVersion: appstudiov1alpha1.GroupVersion.String(), Kind: "ChangeGroup",
			Namespace: req.Namespace, Name: req.ChangeGroup, UID: cg.UID},
		Reason:  EventReason,
		Message: eventMessage(req, parts, res),
		Type:    corev1.EventTypeNormal, Source: corev1.EventSource{Component: "nudgeflow"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if err := a.Kube.Create(ctx, ev); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("recording the hand-back Event: %w", err)
	}
	return nil
}

func shortDigest(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

func eventMessage(req Request, parts []string, res Result) string {
	msg := fmt.Sprintf("handed back to normal nudging of %s: %s", req.Target, strings.Join(parts, "; "))
	if len(res.HandedOver) > 0 {
		msg += fmt.Sprintf(" (%d handed over to the ChangeGroup that collects them now: %s)", len(res.HandedOver), strings.Join(res.HandedOver, ", "))
	}
	return msg
}
