package credentials

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/internal/digestref"
)

// ErrNoRegistryCredentials means no linked dockerconfigjson Secret holds a
// username and password for the image repository.
var ErrNoRegistryCredentials = errors.New("no image registry credentials")

// BuildPipelineServiceAccount is the ServiceAccount a component's builds run as
// (build-service's getBuildPipelineServiceAccountName); its linked Secrets are the
// component's image-push credentials.
func BuildPipelineServiceAccount(component string) string {
	return "build-pipeline-" + component
}

// RegistryCredential is the image registry credential matched for a repository.
// Password is a secret.
type RegistryCredential struct {
	SecretName string
	// Key is the dockerconfigjson auths key that matched (a repository or a prefix).
	Key      string
	Username string
	Password string
}

// String never prints the password.
func (c RegistryCredential) String() string {
	return fmt.Sprintf("registryCredential{secret=%s, key=%s}", c.SecretName, c.Key)
}

// RegistryLookup is a registry credential lookup's outcome. Skipped explains, by
// Secret name only, what could not be read; it never holds Secret contents.
type RegistryLookup struct {
	Credential RegistryCredential
	Skipped    []string
}

// LookupRegistry finds the credential for image (a repository, optionally with a
// tag or digest) the way build-service does for the nudging component
// (getImageRepositoryCredentials, GetMatchedCredentialForImageRepository): the
// kubernetes.io/dockerconfigjson Secrets linked in .secrets of serviceAccount in
// namespace, every auths entry with a username and password (or an auth of
// "user:password"), then the entry whose key is the repository itself, else the
// longest key that is a path prefix of it, down to the registry host alone.
//
// Two deliberate differences, both where build-service would misread: a registry
// port is not taken for a tag (build-service cuts at the first ":"), and an auth
// whose password holds ":" keeps all of it (build-service keeps the second field).
// Entries are tried in Secret name order, then key order, so equal matches pick the
// same credential every time (build-service iterates a Go map).
//
// It returns ErrNoRegistryCredentials (wrapped) when the ServiceAccount is missing,
// links nothing, or no entry matches.
func LookupRegistry(ctx context.Context, r ctrlclient.Reader, namespace, serviceAccount, image string) (RegistryLookup, error) {
	var out RegistryLookup
	var sa corev1.ServiceAccount
	err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: serviceAccount}, &sa)
	if apierrors.IsNotFound(err) {
		return out, fmt.Errorf("%w: service account %s/%s does not exist", ErrNoRegistryCredentials, namespace, serviceAccount)
	}
	if err != nil {
		return out, fmt.Errorf("reading service account %s/%s: %w", namespace, serviceAccount, err)
	}
	names := make([]string, 0, len(sa.Secrets))
	for _, s := range sa.Secrets {
		if s.Name != "" {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return out, fmt.Errorf("%w: no secrets linked to service account %s/%s", ErrNoRegistryCredentials, namespace, serviceAccount)
	}
	sort.Strings(names)
	var entries []RegistryCredential
	for _, name := range names {
		var s corev1.Secret
		err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &s)
		if apierrors.IsNotFound(err) {
			out.Skipped = append(out.Skipped, fmt.Sprintf("linked secret %s does not exist", name))
			continue
		}
		if err != nil {
			return out, fmt.Errorf("reading secret %s/%s: %w", namespace, name, err)
		}
		if s.Type != corev1.SecretTypeDockerConfigJson {
			continue // an SCM or other Secret linked for the build; not a registry credential
		}
		got, skipped := dockerConfigEntries(&s)
		entries = append(entries, got...)
		out.Skipped = append(out.Skipped, skipped...)
	}
	repo := digestref.Repository(image)
	if c, ok := matchRegistry(repo, entries); ok {
		out.Credential = c
		return out, nil
	}
	return out, fmt.Errorf("%w for repository %s in the secrets linked to %s/%s", ErrNoRegistryCredentials, repo, namespace, serviceAccount)
}

// dockerConfigEntries reads the usable auths of a dockerconfigjson Secret, sorted
// by key. Problems are described without the Secret's contents.
func dockerConfigEntries(s *corev1.Secret) (entries []RegistryCredential, skipped []string) {
	var cfg struct {
		Auths map[string]struct {
			Username string `json:"username"`
			Password string `json:"password"`
			Auth     string `json:"auth"`
		} `json:"auths"`
	}
	// The decoding error is not kept: its text may quote the Secret's bytes.
	if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
		return nil, []string{fmt.Sprintf("secret %s: %s is not a docker config", s.Name, corev1.DockerConfigJsonKey)}
	}
	keys := make([]string, 0, len(cfg.Auths))
	for k := range cfg.Auths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		a := cfg.Auths[k]
		user, pass := a.Username, a.Password
		if user == "" || pass == "" {
			decoded, err := base64.StdEncoding.DecodeString(a.Auth)
			u, p, ok := strings.Cut(string(decoded), ":")
			if a.Auth == "" || err != nil || !ok {
				skipped = append(skipped, fmt.Sprintf("secret %s: auths entry %s has no username and password", s.Name, k))
				continue
			}
			user, pass = u, p
		}
		if user == "" || pass == "" {
			skipped = append(skipped, fmt.Sprintf("secret %s: auths entry %s has an empty username or password", s.Name, k))
			continue
		}
		entries = append(entries, RegistryCredential{SecretName: s.Name, Key: k, Username: user, Password: pass})
	}
	return entries, skipped
}

// matchRegistry is build-service's matching: the repository itself, then each
// shorter path prefix (longest first) down to the registry host.
func matchRegistry(repo string, entries []RegistryCredential) (RegistryCredential, bool) {
	for candidate := repo; candidate != ""; {
		for _, e := range entries {
			if strings.TrimSuffix(e.Key, "/") == candidate {
				return e, true
			}
		}
		slash := strings.LastIndex(candidate, "/")
		if slash < 0 {
			break
		}
		candidate = candidate[:slash]
	}
	return RegistryCredential{}, false
}

// RegistryHost is the registry part of an image repository, as build-service takes
// it for Renovate's host rule: everything before the first "/".
func RegistryHost(image string) string {
	host, _, _ := strings.Cut(image, "/")
	return host
}
