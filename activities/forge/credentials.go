package forge

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Konflux's SCM credential labels and annotation (build-service pkg/git/credentials).
const (
	LabelCredentials     = "appstudio.redhat.com/credentials"
	LabelSCMHost         = "appstudio.redhat.com/scm.host"
	AnnotationRepository = "appstudio.redhat.com/scm.repository"

	// GitHub App Secret keys (build-service's pipelines-as-code-secret).
	KeyAppID         = "github-application-id"
	KeyAppPrivateKey = "github-private-key"
)

// DefaultAppSecret is where build-service keeps the GitHub App.
var DefaultAppSecret = types.NamespacedName{Namespace: "build-service", Name: "pipelines-as-code-secret"}

// BasicAuth is a username and token from a basic-auth Secret.
type BasicAuth struct {
	Username string
	Password string
	// Secret names the Secret it came from (for logs; never its content).
	Secret string
}

// FindBasicAuth picks the basic-auth Secret for repo in namespace as Konflux does:
// Secrets labelled credentials=scm and scm.host=<hostname>; the best match wins: a
// repository annotation entry naming the repository exactly, then the longest
// matching wildcard (org/*), then a Secret without the annotation (host-only). ok is
// false when no Secret matches.
func FindBasicAuth(ctx context.Context, c client.Reader, namespace string, repo Repo) (BasicAuth, bool, error) {
	var list corev1.SecretList
	host := repo.Host
	if i := strings.LastIndex(host, ":"); i >= 0 && !strings.Contains(host[i:], "]") {
		host = host[:i] // label values cannot hold a port
	}
	if err := c.List(ctx, &list, client.InNamespace(namespace),
		client.MatchingLabels{LabelCredentials: "scm", LabelSCMHost: host}); err != nil {
		return BasicAuth{}, false, fmt.Errorf("listing SCM credential Secrets in %s: %w", namespace, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	best, bestScore := -1, -1
	for i, s := range list.Items {
		if s.Type != corev1.SecretTypeBasicAuth || len(s.Data[corev1.BasicAuthPasswordKey]) == 0 {
			continue
		}
		score := repoMatchScore(s.Annotations[AnnotationRepository], repo.FullName())
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		return BasicAuth{}, false, nil
	}
	s := list.Items[best]
	return BasicAuth{Username: string(s.Data[corev1.BasicAuthUsernameKey]), Password: string(s.Data[corev1.BasicAuthPasswordKey]),
		Secret: s.Namespace + "/" + s.Name}, true, nil
}

// repoMatchScore: -1 no match, 0 host-only, 1+len(prefix) wildcard, 1<<20 exact.
func repoMatchScore(annotation, fullName string) int {
	if strings.TrimSpace(annotation) == "" {
		return 0
	}
	score := -1
	for _, e := range strings.Split(annotation, ",") {
		e = strings.Trim(strings.TrimSpace(e), "/")
		switch {
		case e == fullName:
			return 1 << 20
		case strings.HasSuffix(e, "/*"):
			prefix := strings.TrimSuffix(e, "*")
			if strings.HasPrefix(fullName, prefix) && 1+len(prefix) > score {
				score = 1 + len(prefix)
			}
		}
	}
	return score
}

// App is a GitHub App's id and private key.
type App struct {
	ID         int64
	PrivateKey []byte
}

// FindApp reads the GitHub App Secret; ok is false when it does not exist.
func FindApp(ctx context.Context, c client.Reader, name types.NamespacedName) (App, bool, error) {
	var s corev1.Secret
	if err := c.Get(ctx, name, &s); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return App{}, false, nil
		}
		return App{}, false, fmt.Errorf("reading GitHub App Secret %s: %w", name, err)
	}
	var id int64
	if _, err := fmt.Sscan(strings.TrimSpace(string(s.Data[KeyAppID])), &id); err != nil || id <= 0 || len(s.Data[KeyAppPrivateKey]) == 0 {
		return App{}, false, fmt.Errorf("GitHub App Secret %s lacks a valid %s or %s", name, KeyAppID, KeyAppPrivateKey)
	}
	return App{ID: id, PrivateKey: s.Data[KeyAppPrivateKey]}, true, nil
}
