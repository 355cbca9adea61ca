package renovate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
)

// HostRule is one entry of Renovate's hostRules: how Renovate logs in to a
// registry to look the new digest up.
type HostRule struct {
	MatchHost string `json:"matchHost"`
	Username  string `json:"username"`
	Password  string `json:"password"`
}

// hostRules returns the RENOVATE_HOST_RULES value for the nudging component's
// image: its registry with the credential build-service would pick (the
// dockerconfigjson Secrets linked to build-pipeline-<nudging>). It is a secret: it
// only ever goes into the run's owned Secret. "" means no credential was found.
//
// build-service stops the nudge there with an error. nudgeflow goes on without
// host rules: Renovate reads a public image anonymously, and for a private one the
// run fails where a user looks (its log, the RunFailed Event) instead of the nudge
// never happening. The reason is logged.
func (a *Activities) hostRules(ctx context.Context, namespace string, nudging *mirrorv1alpha1.Component) (string, error) {
	log := activity.GetLogger(ctx)
	image := nudging.Spec.ContainerImage
	if image == "" {
		log.Warn("the nudging component has no spec.containerImage; Renovate runs without registry host rules",
			"namespace", namespace, "component", nudging.Name)
		return "", nil
	}
	sa := credentials.BuildPipelineServiceAccount(nudging.Name)
	found, err := credentials.LookupRegistry(ctx, a.Kube, namespace, sa, image)
	for _, s := range found.Skipped {
		log.Warn("skipped an image pull credential", "namespace", namespace, "serviceAccount", sa, "problem", s)
	}
	if errors.Is(err, credentials.ErrNoRegistryCredentials) {
		log.Warn("no image registry credentials for the nudging component; Renovate runs without registry host rules (enough for a public image)",
			"namespace", namespace, "component", nudging.Name, "image", image, "reason", err.Error())
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("looking up the registry credentials of %s/%s: %w", namespace, nudging.Name, err)
	}
	rules, err := json.Marshal([]HostRule{{
		MatchHost: credentials.RegistryHost(image),
		Username:  found.Credential.Username,
		Password:  found.Credential.Password,
	}})
	if err != nil {
		return "", fmt.Errorf("rendering the registry host rules: %w", err)
	}
	log.Info("registry host rules from an image pull credential", "namespace", namespace, "component", nudging.Name,
		"matchHost", credentials.RegistryHost(image), "secret", found.Credential.SecretName, "authsKey", found.Credential.Key)
	return string(rules), nil
}
