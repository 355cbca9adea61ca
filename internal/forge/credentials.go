package forge

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/internal/credentials"
)

// Konflux's SCM credential labels and annotation (build-service pkg/git/credentials);
// the lookup itself is internal/credentials, shared with the Renovate activity.
const (
	LabelCredentials     = credentials.LabelCredentials
	LabelSCMHost         = credentials.LabelSCMHost
	AnnotationRepository = credentials.AnnotationSCMRepository

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

// FindBasicAuth picks the basic-auth Secret for repo in namespace as Konflux does
// (see internal/credentials); ok is false when no Secret matches.
func FindBasicAuth(ctx context.Context, c client.Reader, namespace string, repo Repo) (BasicAuth, bool, error) {
	host := repo.Host
	if i := strings.LastIndex(host, ":"); i >= 0 && !strings.Contains(host[i:], "]") {
		host = host[:i] // label values cannot hold a port
	}
	cred, err := credentials.Lookup(ctx, c, namespace, host, repo.FullName())
	if errors.Is(err, credentials.ErrNotFound) {
		return BasicAuth{}, false, nil
	}
	if err != nil {
		return BasicAuth{}, false, err
	}
	return BasicAuth{Username: cred.Username, Password: cred.Password, Secret: namespace + "/" + cred.SecretName}, true, nil
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
