// Package ownership decides whether a tenant namespace owns a repository, which it
// must before nudgeflow writes to the repository or mints a token for it, whatever
// the credential (the GitHub App, a namespace's basic-auth SCM Secret, GitLab and
// Forgejo tokens). A Component's spec.source.git.url is written by the tenant, so
// it proves nothing: without this check any namespace could point a Component at
// another tenant's repository and have nudgeflow push to it with the shared
// GitHub App (build-service has that flaw; nudgeflow must not).
//
// The rule, in the order it is applied:
//
//  1. The cluster admin's binding: the ConfigMap nudgeflow-repository-bindings in
//     nudgeflow's own namespace, key = tenant namespace, value = the repository
//     URLs it owns, one a line. Only the admin writes it (nudgeflow's namespace is
//     not a tenant's), so when it names a repository it decides, for clusters
//     without Pipelines as Code and over any Repository a tenant creates: a tenant
//     can never take a repository the admin bound elsewhere. A repository bound to
//     more than one namespace is owned by none until the admin keeps one.
//  2. Pipelines as Code's Repository (pipelinesascode.tekton.dev/v1alpha1), which is
//     how Konflux says a namespace owns a repository (build-service creates one when
//     it onboards a Component): the namespace of the Repository whose spec.url names
//     the repository owns it. PaC's admission webhook keeps spec.url unique, but
//     compares URLs as written (a ".git" suffix, a slash or a capital makes another
//     URL for the same repository) from an informer's cache (two creates at once
//     both pass), and nothing stops a later claim once the first is deleted and
//     re-created. So when several Repositories name the same repository, the OLDEST
//     one (creationTimestamp, then namespace/name) owns it: a tenant who creates a
//     Repository for a repository another tenant already claimed never takes it
//     over, and the first owner keeps it until it deletes its own Repository.
//
// URLs are compared by Key: host and path, case-folded, without the scheme, the
// default port, userinfo, a ".git" suffix or slashes; a path with "." or ".."
// segments is never owned (it would name another repository once resolved).
package ownership

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The contract's names.
const (
	// BindingConfigMap is the cluster admin's ConfigMap of repository bindings in
	// nudgeflow's own namespace.
	BindingConfigMap = "nudgeflow-repository-bindings"
	// ErrorType is the Temporal ApplicationError type of a refusal (non-retryable).
	ErrorType = "RepositoryNotOwned"
	// EventReason is the reason of the Warning Event a refusal records.
	EventReason = "RepositoryNotOwned"
)

// Key is the identity of a repository URL: lower-case host (without the
// scheme's default port) and path, without userinfo, query, a ".git" suffix or
// leading and trailing slashes. The scheme is not part of it: http:// and
// https:// name the same repository, and nudgeflow's forge clients reach
// github.com's API over https whatever the URL says. Paths are case-folded
// because GitHub, GitLab and Forgejo resolve owner and repository names without
// regard to case: a claim on Org/Repo must not leave org/repo to someone else.
// A URL that is not http(s) with a host and at least owner/name, or whose path
// has empty, "." or ".." segments, has no key.
func Key(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("%q is not a URL: %w", raw, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("%q is not an http(s) URL", raw)
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", fmt.Errorf("%q has no host", raw)
	}
	if port := u.Port(); port != "" && !(scheme == "https" && port == "443") && !(scheme == "http" && port == "80") {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	path := strings.Trim(strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git"), "/")
	segments := strings.Split(path, "/")
	if len(segments) < 2 {
		return "", fmt.Errorf("%q does not name a repository (<host>/<owner>/<name>)", raw)
	}
	for _, s := range segments {
		if s == "" || s == "." || s == ".." {
			return "", fmt.Errorf("%q has an empty, \".\" or \"..\" path segment", raw)
		}
	}
	return host + "/" + strings.ToLower(path), nil
}

// specURL is the URL a Repository for raw should carry in spec.url, written as
// build-service writes it (getGitRepoUrl: the Component's URL without a trailing
// slash, then without ".git").
func specURL(raw string) string {
	return strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(raw), "/"), ".git")
}

// Claim is one Repository's claim on a repository.
type Claim struct {
	Namespace string
	Name      string
	UID       types.UID
	Created   time.Time
	// URL is the Repository's spec.url as written.
	URL string
}

// Before orders claims: the older first, then by namespace and name, so every
// worker picks the same owner among claims made in the same second.
func (c Claim) Before(o Claim) bool { return compareClaims(c, o) < 0 }

func compareClaims(a, b Claim) int {
	if !a.Created.Equal(b.Created) {
		return a.Created.Compare(b.Created)
	}
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

// Source says what decided a Verdict ("" when nothing names the repository).
type Source string

const (
	// sourceBinding: the cluster admin's ConfigMap names it.
	sourceBinding Source = "binding"
	// sourceRepository: a Pipelines as Code Repository names it.
	sourceRepository Source = "repository"
)

// Verdict is who owns a repository.
type Verdict struct {
	// Owner is the owning namespace; "" when none does.
	Owner  string
	Source Source
	// Claim is the owning Repository (SourceRepository).
	Claim Claim
	// Bound lists the namespaces the binding names the repository for, when it
	// names it for more than one (then Owner is "").
	Bound []string
}

// decide applies the rule to key: bindings is the binding ConfigMap's data
// (namespace -> URLs, one a line; nil when there is none), claims are Repositories
// whose spec.url may name key (the others are ignored).
func decide(key string, bindings map[string]string, claims []Claim) Verdict {
	var bound []string
	for ns, urls := range bindings {
		for _, line := range strings.Split(urls, "\n") {
			if k, err := Key(line); err == nil && k == key {
				bound = append(bound, ns)
				break
			}
		}
	}
	slices.Sort(bound)
	switch len(bound) {
	case 0:
	case 1:
		return Verdict{Owner: bound[0], Source: sourceBinding}
	default:
		return Verdict{Source: sourceBinding, Bound: bound}
	}
	var owner *Claim
	for i := range claims {
		if k, err := Key(claims[i].URL); err != nil || k != key {
			continue
		}
		if owner == nil || claims[i].Before(*owner) {
			owner = &claims[i]
		}
	}
	if owner == nil {
		return Verdict{}
	}
	return Verdict{Owner: owner.Namespace, Source: sourceRepository, Claim: *owner}
}
