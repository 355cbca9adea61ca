package changegroup

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
)

// Repository-bound webhook secrets: Secrets in the receiver's own namespace (the
// bridge's; tenants cannot write there), labelled LabelWebhookSecret, each binding
// the repositories of AnnotationWebhookRepositories to the tenant namespace of
// AnnotationWebhookNamespace under its key "secret". An event about such a
// repository verifies only under one of its bound secrets (the shared secret is
// refused for it) and reaches only that namespace's ChangeGroups.
const (
	LabelWebhookSecret            = "nudgeflow.konflux-ci.dev/forge-webhook-secret"
	AnnotationWebhookNamespace    = "nudgeflow.konflux-ci.dev/namespace"
	AnnotationWebhookRepositories = "nudgeflow.konflux-ci.dev/repositories"
)

// RepoSecrets reads the bound secrets from namespace through reader (a cached
// client restricted to that namespace, or the API server).
func RepoSecrets(reader ctrlclient.Reader, namespace string) forgehook.RepoSecretsFunc {
	return func(ctx context.Context, repo string) ([]forgehook.BoundSecret, error) {
		var list corev1.SecretList
		if err := reader.List(ctx, &list, ctrlclient.InNamespace(namespace), ctrlclient.MatchingLabels{LabelWebhookSecret: "true"}); err != nil {
			return nil, fmt.Errorf("listing the webhook Secrets of %s: %w", namespace, err)
		}
		var out []forgehook.BoundSecret
		for _, s := range list.Items {
			ns := strings.TrimSpace(s.Annotations[AnnotationWebhookNamespace])
			if ns == "" || len(s.Data["secret"]) == 0 {
				continue // binds nothing: ignored, never a wildcard
			}
			for r := range strings.SplitSeq(s.Annotations[AnnotationWebhookRepositories], ",") {
				if k := forgehook.RepoKey(r); k != "" && k == repo {
					out = append(out, forgehook.BoundSecret{Namespace: ns, Secret: s.Data["secret"]})
					break
				}
			}
		}
		return out, nil
	}
}
