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
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/activity"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/components"
	ghforge "github.com/nudgeflow/nudgeflow/internal/forge/github"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
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
	LabelManagedBy             = renovaterun.LabelManagedBy
	// LabelKueueQueue is the queue tekton-kueue's webhook assigns a PipelineRun it
	// pends (tekton-kueue pkg/common QueueLabel).
	LabelKueueQueue           = renovaterun.LabelKueueQueue
	ManagedByNudgeflow        = renovaterun.ManagedByNudgeflow
	AnnotationWorkflowID      = konflux.AnnotationWorkflowID
	AnnotationAttempt         = "nudgeflow.konflux-ci.dev/attempt"
	DefaultImage              = "quay.io/konflux-ci/mintmaker-renovate-image:29a2f31"
	tokenKey                  = "token_0"
	hostRulesKey              = "host_rules"
	secretEnvPrefix           = "TOKEN_"
	configMountPath           = "/configs"
	nonRetryableTargetMissing = renovateapi.ErrorTypeTargetMissing
	nonRetryableNotNudgeable  = renovateapi.ErrorTypeNotNudgeable
	nonRetryableNoCredentials = renovateapi.ErrorTypeNoCredentials
	nonRetryableNameConflict  = renovateapi.ErrorTypeNameConflict
	nonRetryableRefused       = renovateapi.ErrorTypeRefused
)

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

// RenovateRunStatus is the polling fallback for the bridge's run-finished signal.
// A run still waiting to start gets its GitHub App token renewed when it nears
// expiry (refreshRunToken).
func (a *Activities) RenovateRunStatus(ctx context.Context, namespace, name string) (renovaterun.RunStatus, error) {
	var plr tektonv1.PipelineRun
	err := a.Kube.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &plr)
	if apierrors.IsNotFound(err) {
		return renovaterun.RunStatus{Name: name, Done: true, Gone: true, Reason: "NotFound", Message: "the PipelineRun was deleted before it ended"}, nil
	}
	if err != nil {
		return renovaterun.RunStatus{}, fmt.Errorf("reading PipelineRun %s/%s: %w", namespace, name, err)
	}
	s := renovaterun.StatusOf(&plr)
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

// eventName is deterministic per (workflow, attempt, reason): a retried activity
// never records an outcome twice.
func eventName(o renovateapi.Outcome) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d/%s", o.WorkflowID, o.Attempt, o.Reason)))
	return fmt.Sprintf("%s.nudge-%s", o.Component, hex.EncodeToString(sum[:])[:16])
}

// RecordNudgeOutcome writes the Event (idempotent by name).
func (a *Activities) RecordNudgeOutcome(ctx context.Context, o renovateapi.Outcome) error {
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
		ObjectMeta: metav1.ObjectMeta{Name: eventName(o), Namespace: o.Namespace,
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
