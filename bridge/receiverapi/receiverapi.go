// Package receiverapi is the bridge's internal API for the forge webhook receiver
// (`nudgeflow receiver`, package bridge/receiver): the receiver faces the internet
// and holds no Kubernetes or Temporal credential, so what it needs comes from the
// bridge and what it verified goes to the bridge, both here:
//
//   - GET SecretsPath: the repository-bound webhook secrets (Bindings), read by the
//     bridge from a label-selected informer in its own namespace; a long poll, so a
//     newly bound repository is protected within a moment;
//   - POST EventsPath: one verified, size-bounded pull request event
//     (forgehook.Event), which the bridge checks again and routes.
//
// Both are served by the bridge's admission webhook server (HTTPS with the webhook
// Service's certificate) to one caller only: the receiver's ServiceAccount, by a
// token the kubelet projects for Audience. The API server refuses that token (its
// audience is not the API server's), so the receiver cannot call Kubernetes at all;
// the bridge checks it with a TokenReview for Audience.
package receiverapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
)

const (
	// Audience is the audience of the receiver's projected ServiceAccount token.
	Audience = "nudgeflow-bridge"
	// SecretsPath serves Bindings (GET; If-None-Match makes it a long poll).
	SecretsPath = "/forge/v1/webhook-secrets"
	// EventsPath takes one verified forgehook.Event (POST, JSON).
	EventsPath = "/forge/v1/events"
	// maxEventBytes bounds an event's JSON: the fields of forgehook.Event are a
	// few URLs, names and hashes.
	maxEventBytes = 64 << 10
)

// Repository-bound webhook secrets: Secrets in nudgeflow's own namespace (the
// bridge's; tenants cannot write there), labelled LabelWebhookSecret, each binding
// the repositories of AnnotationWebhookRepositories to the tenant namespace of
// AnnotationWebhookNamespace under its key "secret". An event about such a
// repository verifies only under one of its bound secrets (the shared secret is
// refused for it) and reaches only that namespace's groups.
const (
	LabelWebhookSecret            = "nudgeflow.konflux-ci.dev/forge-webhook-secret"
	AnnotationWebhookNamespace    = "nudgeflow.konflux-ci.dev/namespace"
	AnnotationWebhookRepositories = "nudgeflow.konflux-ci.dev/repositories"
	// SecretKey is the key of a bound Secret holding the webhook secret.
	SecretKey = "secret"
)

// Binding is one bound Secret: its secret verifies events about Repositories
// (forgehook.RepoKey), which reach Namespace only.
type Binding struct {
	Namespace    string   `json:"namespace"`
	Repositories []string `json:"repositories"`
	Secret       []byte   `json:"secret"`
}

// Bindings are every bound secret, and a revision that changes when they do.
type Bindings struct {
	Revision string    `json:"revision"`
	Secrets  []Binding `json:"secrets"`
}

// BindingsFrom reads the bound Secrets: those labelled, naming a namespace and
// holding a secret; a Secret that names no namespace or no repository binds
// nothing (never a wildcard). The order of secrets does not change the revision.
func BindingsFrom(secrets []corev1.Secret) Bindings {
	var b Bindings
	for _, s := range secrets {
		if s.Labels[LabelWebhookSecret] != "true" {
			continue
		}
		ns := strings.TrimSpace(s.Annotations[AnnotationWebhookNamespace])
		if ns == "" || len(s.Data[SecretKey]) == 0 {
			continue
		}
		var repos []string
		for r := range strings.SplitSeq(s.Annotations[AnnotationWebhookRepositories], ",") {
			if k := forgehook.RepoKey(r); k != "" && !slices.Contains(repos, k) {
				repos = append(repos, k)
			}
		}
		if len(repos) == 0 {
			continue
		}
		slices.Sort(repos)
		b.Secrets = append(b.Secrets, Binding{Namespace: ns, Repositories: repos, Secret: s.Data[SecretKey]})
	}
	slices.SortFunc(b.Secrets, func(x, y Binding) int {
		if c := strings.Compare(x.Namespace, y.Namespace); c != 0 {
			return c
		}
		if c := slices.Compare(x.Repositories, y.Repositories); c != 0 {
			return c
		}
		return slices.Compare(x.Secret, y.Secret)
	})
	raw, _ := json.Marshal(b.Secrets)
	sum := sha256.Sum256(raw)
	b.Revision = hex.EncodeToString(sum[:16])
	return b
}

// Index is Bindings by repository: what forgehook.Handler.RepoSecrets looks up.
type Index map[string][]forgehook.BoundSecret

// Index indexes b by repository.
func (b Bindings) Index() Index {
	idx := Index{}
	for _, s := range b.Secrets {
		for _, r := range s.Repositories {
			idx[r] = append(idx[r], forgehook.BoundSecret{Namespace: s.Namespace, Secret: s.Secret})
		}
	}
	return idx
}
