package renovate

import (
	"context"
	"fmt"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/activity"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/components"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// Renewing a waiting run's token rewrites the Secret nudgeflow created for the run
// (managed-by nudgeflow, owned by the run); no other Secret is ever updated.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=update

// Annotations of a run's Secret that holds a GitHub App token: when the token
// expires and the repository it is for. Never the token.
const (
	AnnotationTokenExpires    = "nudgeflow.konflux-ci.dev/token-expires-at"
	annotationTokenRepository = "nudgeflow.konflux-ci.dev/token-repository"
)

// RefreshRunTokenBefore: the App token of a run that has not started is renewed
// at a poll once it has less than this left. A run may wait longer than a token
// lives (an hour) for its branch or in a Kueue queue; the Nudge workflow polls a
// waiting run every PollInterval (5 minutes by default), so a run admitted between
// two polls starts with 15 minutes of token at least, and the token it is given
// is valid RunTokenLife. Only a started run's token can expire under it, which a
// Renovate run (minutes) does not outlive.
const RefreshRunTokenBefore = 20 * time.Minute

// componentRef is the Component a refused nudge records its Event on.
func componentRef(c *mirrorv1alpha1.Component) *corev1.ObjectReference {
	return components.Ref(c)
}

// waiting: the run has not started and nudgeflow, its branch queue or Kueue will
// start it (a run a ChangeGroup held never starts).
func waiting(plr *tektonv1.PipelineRun) bool {
	return plr.Spec.Status == tektonv1.PipelineRunSpecStatusPending && plr.Annotations[konflux.AnnotationHeldBy] == "" &&
		plr.Status.StartTime == nil
}

// refreshRunToken renews the GitHub App token in the Secret of a run that still
// waits, when it expires within RefreshRunTokenBefore: the namespace must still own
// the repository (a refusal leaves the old token to expire), and the new token is
// the cache's or a new one, valid RunTokenLife. A basic-auth token (no expiry
// annotation) is left alone.
func (a *Activities) refreshRunToken(ctx context.Context, plr *tektonv1.PipelineRun) error {
	var secret corev1.Secret
	err := a.Kube.Get(ctx, types.NamespacedName{Namespace: plr.Namespace, Name: plr.Name}, &secret)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the Secret of PipelineRun %s/%s: %w", plr.Namespace, plr.Name, err)
	}
	raw, ok := secret.Annotations[AnnotationTokenExpires]
	if !ok || !ownedByRun(&secret, plr) {
		return nil
	}
	expires, err := time.Parse(time.RFC3339, raw)
	if err == nil && time.Until(expires) > RefreshRunTokenBefore {
		return nil
	}
	repoURL := secret.Annotations[annotationTokenRepository]
	target := &mirrorv1alpha1.Component{}
	if err := components.Get(ctx, a.Kube, plr.Namespace, konflux.NudgedKey.Get(plr.Annotations), target); err != nil {
		target.Namespace, target.Name = plr.Namespace, konflux.NudgedKey.Get(plr.Annotations)
	}
	if err := a.owner().Require(ctx, plr.Namespace, repoURL, componentRef(target)); err != nil {
		return err
	}
	repo, err := forge.ParseRepoURL(repoURL)
	if err != nil {
		return fmt.Errorf("the token's repository: %w", err)
	}
	owner, name := repo.Owner, repo.Name
	s, ok, err := a.appCredential(ctx, forgeInfo{platform: "github", scheme: repo.Scheme, host: repo.Host, repository: owner + "/" + name})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("the GitHub App Secret is gone or the App no longer installed on %s: the run keeps the token it has", repoURL)
	}
	// The Secret's whole data: a fake client keeps StringData, which an API server
	// merges into Data and drops.
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	for k, v := range secret.StringData {
		secret.Data[k] = []byte(v)
	}
	secret.StringData = nil
	secret.Data[tokenKey] = []byte(s.cred.Password)
	secret.Annotations[AnnotationTokenExpires] = s.expires.UTC().Format(time.RFC3339)
	if err := a.Kube.Update(ctx, &secret); err != nil {
		return fmt.Errorf("renewing the token in Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	activity.GetLogger(ctx).Info("renewed the GitHub App token of a Renovate run that waits to start", "pipelineRun", plr.Name,
		"namespace", plr.Namespace, "expired", raw, "expires", secret.Annotations[AnnotationTokenExpires])
	return nil
}

// ownedByRun: the Secret is this run's (not a leftover of a deleted run of the
// same name).
func ownedByRun(s *corev1.Secret, plr *tektonv1.PipelineRun) bool {
	for _, ref := range s.OwnerReferences {
		if ref.UID == plr.UID && ref.Kind == "PipelineRun" {
			return true
		}
	}
	return false
}
