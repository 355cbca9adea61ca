// Package credentials finds the SCM credentials of a repository the way Konflux's
// build-service does (BS:pkg/git/credentials): a Secret of type
// kubernetes.io/basic-auth in the tenant namespace, labelled
// appstudio.redhat.com/credentials=scm and appstudio.redhat.com/scm.host=<host>,
// optionally narrowed by the annotation appstudio.redhat.com/scm.repository
// ("org/repo, org/*"). The best match wins: an exact repository, then the longest
// wildcard prefix, then a host-only Secret. LookupRegistry finds a component's
// image registry credential the same way build-service does (registry.go).
//
// The tokens and passwords it returns must only ever be written into a Kubernetes
// Secret by an activity; they never enter a workflow input, signal, result or log.
package credentials

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// Label and annotation keys of SCM credential Secrets (build-service's old forms,
// which tests write; internal/konflux knows them, and Lookup reads both forms).
const (
	LabelCredentials        = konflux.LabelCredentials
	LabelCredentialsSCM     = "scm"
	LabelSCMHost            = konflux.LabelSCMHost
	AnnotationSCMRepository = konflux.AnnotationSCMRepository
	// defaultUsername is what build-service uses when the Secret has none.
	defaultUsername = "red-hat-konflux"
)

// ErrNotFound means no Secret matches the host and repository.
var ErrNotFound = errors.New("no SCM credentials")

// Credential is a matched basic-auth Secret. Password is a secret.
type Credential struct {
	SecretName string
	Username   string
	Password   string
}

// String never prints the password.
func (c Credential) String() string {
	return fmt.Sprintf("credential{secret=%s, username=%s}", c.SecretName, c.Username)
}

// Lookup returns the best-matching credential for host and repository ("org/repo").
func Lookup(ctx context.Context, r ctrlclient.Reader, namespace, host, repository string) (Credential, error) {
	label := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		label = h // label values cannot hold a port
	}
	list, err := secretsLabelled(ctx, r, namespace, label)
	if err != nil {
		return Credential{}, fmt.Errorf("listing SCM credential Secrets for %s in %s: %w", host, namespace, err)
	}
	best, bestScore := -1, -1
	// Sorted by name so equal scores pick the same Secret every time.
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	for i := range list.Items {
		s := &list.Items[i]
		if s.Type != corev1.SecretTypeBasicAuth || len(s.Data[corev1.BasicAuthPasswordKey]) == 0 {
			continue
		}
		if score := matchScore(konflux.SCMRepositoryKey.Get(s.Annotations), repository); score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		return Credential{}, fmt.Errorf("%w for %s/%s in namespace %s", ErrNotFound, host, repository, namespace)
	}
	s := &list.Items[best]
	user := string(s.Data[corev1.BasicAuthUsernameKey])
	if user == "" {
		user = defaultUsername
	}
	return Credential{SecretName: s.Name, Username: user, Password: string(s.Data[corev1.BasicAuthPasswordKey])}, nil
}

// matchScore ranks a Secret's repository annotation against repository: -1 no match,
// 0 host-only (no annotation), 1+len(prefix) for a wildcard, a large value for exact.
func matchScore(annotation, repository string) int {
	if strings.TrimSpace(annotation) == "" {
		return 0
	}
	repository = strings.Trim(repository, "/")
	score := -1
	for _, p := range strings.Split(annotation, ",") {
		p = strings.Trim(strings.TrimSpace(p), "/")
		switch {
		case p == "":
		case p == repository:
			return 1 << 20
		case strings.HasSuffix(p, "*"):
			prefix := strings.TrimSuffix(p, "*")
			if strings.HasPrefix(repository, prefix) && 1+len(prefix) > score {
				score = 1 + len(prefix)
			}
		}
	}
	return score
}

// secretsLabelled lists the namespace's SCM credential Secrets of host, labelled in
// the new (konflux-ci.dev) or the old (appstudio) form (ADR 69), each once.
func secretsLabelled(ctx context.Context, r ctrlclient.Reader, namespace, host string) (corev1.SecretList, error) {
	var out corev1.SecretList
	seen := map[string]bool{}
	for _, sel := range []ctrlclient.MatchingLabels{
		{konflux.CredentialsKey.New: LabelCredentialsSCM, konflux.SCMHostKey.New: host},
		{konflux.CredentialsKey.Old: LabelCredentialsSCM, konflux.SCMHostKey.Old: host},
	} {
		var list corev1.SecretList
		if err := r.List(ctx, &list, ctrlclient.InNamespace(namespace), sel); err != nil {
			return out, err
		}
		for _, s := range list.Items {
			if !seen[s.Name] {
				seen[s.Name] = true
				out.Items = append(out.Items, s)
			}
		}
	}
	return out, nil
}
