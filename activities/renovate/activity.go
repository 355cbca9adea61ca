// Package renovate launches Konflux-style Renovate nudge PipelineRuns: one
// PipelineRun per (nudging build, nudged component, attempt) with a deterministic
// name, the labels and annotations integration-service and build-service use, a
// Renovate config generated like theirs from the two ConfigMap tiers and the
// nudging component's distribution repositories, registry host rules from its
// image pull credentials, the cluster's trusted CA bundle, and a config ConfigMap,
// token Secret and CA ConfigMap named like the PipelineRun and owned by it, so they
// are garbage collected with it. It also reads a run's end (the polling fallback)
// and records nudge outcomes as Events on the nudged Component.
//
// Requests and results carry no secret: the git token and the registry password
// are read here and written only into the owned Secret.
package renovate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/activity"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	ghforge "github.com/nudgeflow/nudgeflow/activities/forge/github"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/components"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
)

// Labels and annotations of nudge PipelineRuns, plus nudgeflow's own keys the
// bridge uses to route a run's end to its workflow. Konflux's are the old
// (appstudio) forms of internal/konflux's Keys, kept for the tests that play an
// old-model service: nudgeflow reads them with konflux.NudgeTypeKey and friends
// (new form first) and writes both forms on its runs (ADR 69 phase 1).
const (
	LabelType                  = konflux.LabelNudgeType
	LabelTypeNudge             = konflux.NudgeTypeValue
	AnnotationNudgedComponents = konflux.AnnotationNudged
	AnnotationNudgingComponent = konflux.AnnotationNudging
	AnnotationNudgingImage     = konflux.AnnotationNudgingImg
	AnnotationNudgingPipeline  = konflux.AnnotationNudgingPLR
	AnnotationNudgingCommit    = konflux.AnnotationNudgingSHA
	LabelManagedBy             = "app.kubernetes.io/managed-by"
	// LabelKueueQueue is the queue tekton-kueue's webhook assigns a PipelineRun it
	// pends (tekton-kueue pkg/common QueueLabel).
	LabelKueueQueue           = "kueue.x-k8s.io/queue-name"
	ManagedByNudgeflow        = "nudgeflow"
	AnnotationWorkflowID      = konflux.AnnotationWorkflowID
	AnnotationAttempt         = "nudgeflow.konflux-ci.dev/attempt"
	DefaultImage              = "quay.io/konflux-ci/mintmaker-renovate-image:29a2f31"
	tokenKey                  = "token_0"
	hostRulesKey              = "host_rules"
	secretEnvPrefix           = "TOKEN_"
	configMountPath           = "/configs"
	nonRetryableTargetMissing = "TargetMissing"
	nonRetryableNotNudgeable  = "NotNudgeable"
	nonRetryableNoCredentials = "NoCredentials"
	nonRetryableNameConflict  = "NameConflict"
	nonRetryableRefused       = "Refused"
)

// NonRetryableErrorTypes are the error types a retry never fixes.
var NonRetryableErrorTypes = []string{nonRetryableTargetMissing, nonRetryableNotNudgeable, nonRetryableNoCredentials, nonRetryableNameConflict, nonRetryableRefused, ErrorTypeSuperseded}

// Activities holds the clients the activities use.
type Activities struct {
	Kube ctrlclient.Client
	// Image is the Renovate image; DefaultImage when empty.
	Image string
	// OperatorNamespace is nudgeflow's own namespace, where a ConfigMap labelled
	// config.openshift.io/inject-trusted-cabundle=true holds the cluster's trusted
	// CA bundle (build-service looks in its own namespace the same way). Empty: no
	// bundle is looked for.
	OperatorNamespace string
	// GitHubApp is the Secret of the GitHub App whose repository-scoped
	// installation tokens Renovate pushes with on GitHub (build-service's
	// pipelines-as-code-secret when zero).
	GitHubApp types.NamespacedName
	// Transport makes the GitHub App's calls (http.DefaultTransport when nil).
	Transport http.RoundTripper
	// Ownership says whether a namespace owns the repository it nudges, which it
	// must before a credential is read or a token minted; nil: a checker of Kube
	// with OperatorNamespace's binding ConfigMap, recording Events.
	Ownership *ownership.Checker
	// AppTokens mints and caches the GitHub App's tokens
	// (ghforge.DefaultAppTokens when nil).
	AppTokens *ghforge.AppTokens
	// StandInForge says which forge hosts (host:port) only stand-in runs go to: a
	// test world's runs there end by a status a test writes and push nothing, and
	// CheckDelivery answers what the run's log said (DeliveryRequest.LogSaysOK)
	// instead of asking the forge. Test worlds only; nil in a deployment.
	StandInForge func(host string) bool

	ownership ownership.Lazy
}

// owner is the ownership checker, made once (it keeps an index of claims).
func (a *Activities) owner() *ownership.Checker {
	return a.ownership.Get(a.Ownership, func() *ownership.Checker {
		return &ownership.Checker{Reader: a.Kube, BindingNamespace: a.OperatorNamespace, Events: a.Kube}
	})
}

// New returns the activities with the Renovate image from RENOVATE_IMAGE (as
// build-service and integration-service read it) or the default.
func New(kube ctrlclient.Client, operatorNamespace string) *Activities {
	return &Activities{Kube: kube, Image: os.Getenv("RENOVATE_IMAGE"), OperatorNamespace: operatorNamespace}
}

// RunStatus is how a Renovate run ended, as far as Kubernetes knows.
type RunStatus struct {
	Name      string `json:"name"`
	Done      bool   `json:"done"`
	Succeeded bool   `json:"succeeded"`
	// Gone means the run no longer exists (pruned or deleted) before it ended.
	Gone    bool   `json:"gone,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// HeldBy is the ChangeGroup that held the run at admission and collects its
	// build: the nudge goes on in that group's pull request.
	HeldBy string `json:"heldBy,omitempty"`
	// Cancelled: someone other than nudgeflow cancelled or stopped the run (a
	// person with tkn or the console, spec.status), and no ChangeGroup held it.
	// The nudge ends there; it is not a failure to retry.
	Cancelled bool `json:"cancelled,omitempty"`
	// SupersededBy names the run for a newer build of the same edge that stopped
	// this one (supersede.go): the nudge ends there, the newer one carries it.
	SupersededBy string `json:"supersededBy,omitempty"`
	// ExitedZero: Renovate ended with exit code 0 (Tekton's Succeeded condition
	// True), whatever the step read in its log: whether it delivered is the
	// forge's to say (CheckDelivery).
	ExitedZero bool `json:"exitedZero,omitempty"`
}

// RunStatus.Reason of a run a ChangeGroup held at admission: the group took its
// build, or it did not (it ended in between): the run failed, but the build was never tried.
const (
	ReasonHeldByChangeGroup = "HeldByChangeGroup"
	ReasonHeldReturned      = "HeldAndReturned"
)

// StatusOf reads a PipelineRun's Succeeded condition. A run a ChangeGroup held at
// admission ends when the bridge has written where its build went
// (konflux.AnnotationHeldOutcome), not when Tekton marks it cancelled: only then
// does the Nudge workflow know whether to stop or to try again.
func StatusOf(plr *tektonv1.PipelineRun) RunStatus {
	s := RunStatus{Name: plr.Name}
	if plr.Annotations[konflux.AnnotationHeldBy] != "" {
		outcome := plr.Annotations[konflux.AnnotationHeldOutcome]
		if group, ok := strings.CutPrefix(outcome, konflux.HeldOutcomeDeliveredPrefix); ok {
			s.Done, s.HeldBy, s.Reason = true, group, ReasonHeldByChangeGroup
			s.Message = fmt.Sprintf("ChangeGroup %s held the run and collects its build", group)
			return s
		}
		if outcome == konflux.HeldOutcomeReturned {
			// Cancelled at creation, the run never starts, whatever Tekton writes.
			s.Done, s.Reason = true, ReasonHeldReturned
			s.Message = "a ChangeGroup held the run but no longer collects its build"
		}
		return s
	}
	if c := plr.Status.GetCondition(apis.ConditionSucceeded); c != nil && !c.IsUnknown() {
		s.Done, s.Succeeded, s.Reason, s.Message = true, c.IsTrue(), c.Reason, c.Message
		s.Cancelled = !s.Succeeded && cancelledByRequest(plr, c.Reason)
		s.ExitedZero = s.Succeeded
		if s.Succeeded {
			switch outcomeOf(plr) {
			case OutcomeRegistryAuthFailed:
				s.Succeeded, s.Reason, s.Message = false, ReasonRegistryAuthFailed, registryAuthMessage(plr)
			case OutcomeImageLookupFailed:
				s.Succeeded, s.Reason, s.Message = false, ReasonImageLookupFailed, imageLookupMessage(plr)
			case OutcomeRepositoryNotUpdated:
				s.Succeeded, s.Reason, s.Message = false, ReasonRepositoryNotUpdated, repositoryNotUpdatedMessage(plr)
			case OutcomePRNotOpened:
				s.Succeeded, s.Reason, s.Message = false, ReasonPRNotOpened, prNotOpenedMessage(plr)
			default:
				if ok, by := supersededOnBranch(outcomeOf(plr)); ok {
					// The step found a newer build on the nudge branch and wrote nothing.
					s.Succeeded, s.Reason, s.SupersededBy = false, ReasonSupersededOnBranch, by
					s.Message = "the nudge branch already carries a newer build's digest (run " + by + "): the step did not run Renovate"
				}
			}
		}
		if by := plr.Annotations[AnnotationSupersededBy]; by != "" && !s.Succeeded {
			s.SupersededBy, s.Cancelled = by, false
		}
	}
	return s
}

// cancelledByRequest: the run ended because its spec.status asked it to stop
// (Cancelled, CancelledRunFinally, StoppedRunFinally; nudgeflow only writes that on
// the runs a ChangeGroup holds, which carry AnnotationHeldBy), or Tekton says it was
// cancelled. A timeout or a failed task is not a cancel.
func cancelledByRequest(plr *tektonv1.PipelineRun, reason string) bool {
	switch plr.Spec.Status {
	case tektonv1.PipelineRunSpecStatusCancelled, tektonv1.PipelineRunSpecStatusCancelledRunFinally,
		tektonv1.PipelineRunSpecStatusStoppedRunFinally:
		return true
	}
	return reason == tektonv1.PipelineRunReasonCancelled.String()
}

// RenovateRunStatus is the polling fallback for the bridge's run-finished signal.
// A run still waiting to start gets its GitHub App token renewed when it nears
// expiry (refreshRunToken).
func (a *Activities) RenovateRunStatus(ctx context.Context, namespace, name string) (RunStatus, error) {
	var plr tektonv1.PipelineRun
	err := a.Kube.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &plr)
	if apierrors.IsNotFound(err) {
		return RunStatus{Name: name, Done: true, Gone: true, Reason: "NotFound", Message: "the PipelineRun was deleted before it ended"}, nil
	}
	if err != nil {
		return RunStatus{}, fmt.Errorf("reading PipelineRun %s/%s: %w", namespace, name, err)
	}
	s := StatusOf(&plr)
	if !s.Done && waiting(&plr) {
		// A run may wait longer than its App token lives: renew it before it starts.
		// A failure is tried again at the next poll; the status is what was asked.
		if err := a.refreshRunToken(ctx, &plr); err != nil {
			activity.GetLogger(ctx).Warn("the App token of a waiting Renovate run was not renewed; trying again at the next poll",
				"pipelineRun", name, "namespace", namespace, "error", err)
		}
	}
	return s, nil
}

// Outcome is one nudge outcome to record as an Event on the nudged Component.
type Outcome struct {
	Namespace  string `json:"namespace"`
	Component  string `json:"component"`
	WorkflowID string `json:"workflowID"`
	Attempt    int    `json:"attempt"`
	// Warning makes a Warning event; otherwise Normal.
	Warning     bool   `json:"warning,omitempty"`
	Reason      string `json:"reason"`
	Message     string `json:"message"`
	PipelineRun string `json:"pipelineRun,omitempty"`
}

// EventName is deterministic per (workflow, attempt, reason): a retried activity
// never records an outcome twice.
func EventName(o Outcome) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d/%s", o.WorkflowID, o.Attempt, o.Reason)))
	return fmt.Sprintf("%s.nudge-%s", o.Component, hex.EncodeToString(sum[:])[:16])
}

// RecordNudgeOutcome writes the Event (idempotent by name).
func (a *Activities) RecordNudgeOutcome(ctx context.Context, o Outcome) error {
	var comp mirrorv1alpha1.Component
	if err := components.Get(ctx, a.Kube, o.Namespace, o.Component, &comp); err != nil {
		if apierrors.IsNotFound(err) {
			activity.GetLogger(ctx).Warn("nudged component is gone; outcome not recorded as an event", "component", o.Component, "reason", o.Reason)
			return nil
		}
		return fmt.Errorf("reading component %s/%s: %w", o.Namespace, o.Component, err)
	}
	kind := corev1.EventTypeNormal
	if o.Warning {
		kind = corev1.EventTypeWarning
	}
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: EventName(o), Namespace: o.Namespace,
			Labels:      map[string]string{LabelManagedBy: ManagedByNudgeflow},
			Annotations: map[string]string{AnnotationWorkflowID: o.WorkflowID, AnnotationAttempt: fmt.Sprint(o.Attempt)}},
		// The kind read (either Component kind): kubectl describe finds it by UID.
		InvolvedObject: *components.Ref(&comp),
		Reason:         o.Reason, Message: o.Message, Type: kind,
		Source:         corev1.EventSource{Component: "nudgeflow"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	return createOrKeep(ctx, a.Kube, ev)
}

func createOrKeep(ctx context.Context, c ctrlclient.Client, obj ctrlclient.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
