package changegroupcontroller

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/searchattr"
	cgwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
)

// ErrEnded says a group's workflow has ended: whatever its CR status says, it holds
// nothing any more.
var ErrEnded = errors.New("the ChangeGroup's workflow has ended")

// ErrNotStarted says a group is too new to take a build: the bridge has not
// initialised it (finalizer, workflow) yet. Callers retry shortly.
var ErrNotStarted = errors.New("the ChangeGroup is not initialised by the bridge yet")

// Starter delivers signals to a group's workflow, starting it when it does not run
// yet. It is how every entry point decides whether a group holds a build: the
// workflow itself answers, so the bridge can never disagree with it (a group whose
// status write failed, or whose workflow is not started yet, is handled right).
type Starter struct {
	Temporal  client.Client
	TaskQueue string
	Settings  cgwf.Settings
	// Kube, when set, lets Deliver add the group's finalizer itself before it starts
	// the workflow, instead of waiting for the group's reconciler to do it.
	Kube ctrlclient.Client
}

// SignalWithStart sends signal to the group's workflow, starting it when needed. It
// returns ErrEnded when the workflow has ended (the ID is never reused).
func (s *Starter) SignalWithStart(ctx context.Context, cg *appstudiov1alpha1.ChangeGroup, signal string, arg any) error {
	id := cgwf.WorkflowID(cg.Namespace, cg.Name, string(cg.UID))
	in := cgwf.Input{Namespace: cg.Namespace, Name: cg.Name, UID: string(cg.UID), NudgedComponent: cg.Spec.NudgedComponent, Settings: s.Settings}
	if cg.Spec.Timeout != nil {
		in.Timeout = cg.Spec.Timeout.Duration
	}
	in.AutoRelease, in.Automatic = AutoReleaseOf(cg), grouplookup.IsAutomatic(cg)
	opts := client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: s.TaskQueue,
		// A late event must never restart a finished group.
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			searchattr.KubeNamespace.ValueSet(cg.Namespace),
			searchattr.ChangeGroup.ValueSet(cg.Name),
			searchattr.NudgedComponent.ValueSet(cg.Spec.NudgedComponent),
			searchattr.Phase.ValueSet(string(appstudiov1alpha1.PhaseInitialized)),
			searchattr.ReadyCount.ValueSet(0),
		),
		StaticSummary: fmt.Sprintf("ChangeGroup %s/%s: one pull request for %s", cg.Namespace, cg.Name, cg.Spec.NudgedComponent),
	}
	_, err := s.Temporal.SignalWithStartWorkflow(ctx, id, signal, arg, opts, cgwf.WorkflowName, in)
	if temporal.IsWorkflowExecutionAlreadyStartedError(err) {
		// Callers pass groups whose CR is not final: the workflow closed without
		// writing a final status, and nothing ever will (closedWorkflows).
		if markClosed(cg.UID) {
			log.FromContext(ctx).Info("the ChangeGroup's workflow has closed but its status is not final; it holds nothing and will not move again",
				"namespace", cg.Namespace, "name", cg.Name, "phase", cg.Status.Phase, "workflowID", id)
		}
		return ErrEnded
	}
	if err != nil {
		return fmt.Errorf("starting or signalling workflow %s: %w", id, err)
	}
	return nil
}

// Deliver hands a held build to the group that held it and reports whether the
// group took responsibility for it. A group whose CR says it collects gets it with
// SignalWithStart (started if its workflow is not running yet); a group whose CR says
// it ended is only signalled, never started again (its history may be past
// retention). A workflow that has ended took the build only if it received it
// before: otherwise the caller nudges it normally.
func (s *Starter) Deliver(ctx context.Context, cg *appstudiov1alpha1.ChangeGroup, b cgwf.ComponentBuilt) (bool, error) {
	if grouplookup.IsActive(cg) && !controllerutil.ContainsFinalizer(cg, konflux.FinalizerChangeGroup) {
		// A workflow is started only for a group that carries the finalizer: one
		// started for a group deleted a moment later would otherwise outlive its CR
		// (the deletion would never cancel it). Add it here (optimistic lock: a group
		// deleted or changed meanwhile is re-read by the caller), or let the caller
		// retry once the group's reconciler has.
		if s.Kube == nil {
			return false, fmt.Errorf("%w: ChangeGroup %s/%s", ErrNotStarted, cg.Namespace, cg.Name)
		}
		patch := ctrlclient.MergeFromWithOptions(cg.DeepCopy(), ctrlclient.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(cg, konflux.FinalizerChangeGroup)
		if err := s.Kube.Patch(ctx, cg, patch); err != nil {
			return false, fmt.Errorf("adding the finalizer of ChangeGroup %s/%s before starting it: %w", cg.Namespace, cg.Name, err)
		}
	}
	var err error
	if grouplookup.IsActive(cg) {
		err = s.SignalWithStart(ctx, cg, cgwf.SignalComponentBuilt, b)
	} else {
		err = cgwf.SignalBuilt(ctx, s.Temporal, cgwf.WorkflowID(cg.Namespace, cg.Name, string(cg.UID)), b)
		if isGone(err) {
			err = ErrEnded
		}
	}
	if err == nil {
		return true, nil // a running workflow collects it or hands it back
	}
	if !errors.Is(err, ErrEnded) {
		return false, err
	}
	return s.Took(ctx, cg, b.Component, b.Digest)
}

// Took reports whether the ended (closed) workflow of a group received the build
// (component@digest) and kept it: then the group delivered it, or it was replaced
// by a newer build of the component, and nothing else may nudge it. A group that
// never received it, or handed it back, holds nothing: the caller nudges.
func (s *Starter) Took(ctx context.Context, cg *appstudiov1alpha1.ChangeGroup, component, digest string) (bool, error) {
	id := cgwf.WorkflowID(cg.Namespace, cg.Name, string(cg.UID))
	var st cgwf.State
	err := s.Temporal.GetWorkflow(ctx, id, "").Get(ctx, &st)
	if isGone(err) {
		return false, nil // past retention: nothing to ask
	}
	if err != nil {
		var failed *temporal.WorkflowExecutionError
		if errors.As(err, &failed) {
			return false, nil // ended without a result: it took nothing it could deliver
		}
		return false, fmt.Errorf("reading the result of %s: %w", id, err)
	}
	if !st.Seen[component+"@"+digest] {
		return false, nil
	}
	// A build the group handed back is not the group's any more: the Nudge that
	// carries it may be the very one whose run was held here, so it must hear
	// "returned" and try again (at worst a second nudge, never none).
	for _, c := range st.Components {
		if c.Name == component && c.HandedBack == digest {
			return false, nil
		}
	}
	return true, nil
}

// AutoReleaseOf converts the CR's spec.autoRelease for the workflow (nil: none).
func AutoReleaseOf(cg *appstudiov1alpha1.ChangeGroup) *cgwf.AutoRelease {
	a := cg.Spec.AutoRelease
	if a == nil {
		return nil
	}
	out := &cgwf.AutoRelease{Policy: string(a.Policy)}
	if a.Window != nil {
		out.Window = a.Window.Duration
	}
	if a.MaxWait != nil {
		out.MaxWait = a.MaxWait.Duration
	}
	if a.Quorum != nil {
		out.Quorum = int(*a.Quorum)
	}
	return out
}
