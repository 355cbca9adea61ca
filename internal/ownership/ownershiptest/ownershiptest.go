// Package ownershiptest stands in for build-service's onboarding of a Component in
// tests and the dev stack: the Pipelines as Code Repository it creates for the
// Component's repository, which is what makes the namespace own it
// (internal/ownership). From build-service at ccde63a,
// internal/controller/component_build_controller_pac_repository.go:
// ensurePaCRepository (:325-420: reuse the namespace's Repository whose spec.url
// is the Component's URL, else create one, renamed with a random suffix when the
// name is taken by another URL), generatePACRepositoryOldModel (:612-690: named
// after the URL, spec.url the URL) and generatePaCRepositoryNameFromGitUrl
// (:981-1015); the URL is getGitRepoUrlOldModel's (component_build_controller_pac.go
// :1272-1275: without a trailing slash, then without ".git"). What the real one
// adds (git_provider, settings, the Component as an owner) nudgeflow does not read.
package ownershiptest

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	newmodel "github.com/nudgeflow/nudgeflow/api/mirror/konflux/v1alpha1"
	pacv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/pipelinesascode/v1alpha1"
)

var (
	invalidName = regexp.MustCompile(`[^a-z0-9\-]`)
	hyphens     = regexp.MustCompile(`-+`)
)

// gitRepoURL is build-service's getGitRepoUrl: the URL without a trailing slash,
// then without ".git".
func gitRepoURL(gitURL string) string {
	return strings.TrimSuffix(strings.TrimSuffix(gitURL, "/"), ".git")
}

// repositoryName is build-service's generatePaCRepositoryNameFromGitUrl: host and
// path, lower-cased, every other character a hyphen, at most 230 characters.
func repositoryName(gitURL string) (string, error) {
	u, err := url.Parse(gitURL)
	if err != nil {
		return "", err
	}
	s := strings.ToLower(u.Host + u.Path)
	s = strings.ReplaceAll(strings.ReplaceAll(s, "/", "-"), ".", "-")
	s = strings.Trim(hyphens.ReplaceAllString(invalidName.ReplaceAllString(s, "-"), "-"), "-")
	if len(s) > 230 {
		s = s[:220] + "-" + randomString(10)
	}
	return s, nil
}

// Repository is the Repository build-service creates for gitURL in namespace.
func Repository(namespace, gitURL string) *pacv1alpha1.Repository {
	u := gitRepoURL(gitURL)
	name, err := repositoryName(u)
	if err != nil {
		panic(fmt.Sprintf("ownershiptest: %v", err))
	}
	return &pacv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: pacv1alpha1.RepositorySpec{URL: u}}
}

// Onboard is build-service's ensurePaCRepository for a Component with a git URL
// (none: nothing to onboard): nothing when a Repository of the namespace already
// names the URL, else it creates one.
func Onboard(ctx context.Context, c client.Client, comp *mirrorv1alpha1.Component) error {
	if comp.Spec.Source.GitSource == nil || comp.Spec.Source.GitSource.URL == "" {
		return nil
	}
	return OnboardURL(ctx, c, comp.Namespace, comp.Spec.Source.GitSource.URL)
}

// OnboardURL is Onboard for a repository URL.
func OnboardURL(ctx context.Context, c client.Client, namespace, gitURL string) error {
	repo := Repository(namespace, gitURL)
	var list pacv1alpha1.RepositoryList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing the Pipelines as Code Repositories of %s: %w", namespace, err)
	}
	for _, r := range list.Items {
		if r.Spec.URL == repo.Spec.URL {
			return nil
		}
	}
	var existing pacv1alpha1.Repository
	err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: repo.Name}, &existing)
	if err == nil {
		// The name is taken by another URL: build-service adds a random suffix.
		repo.Name = repo.Name + "-" + randomString(5)
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading Pipelines as Code Repository %s/%s: %w", namespace, repo.Name, err)
	}
	if err := c.Create(ctx, repo); err != nil {
		return fmt.Errorf("creating Pipelines as Code Repository %s/%s for %s: %w", namespace, repo.Name, repo.Spec.URL, err)
	}
	return nil
}

func randomString(n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b)
}

// Onboarding returns c, whose create (or update, or patch) of a Component with a
// git URL onboards it before it returns, as build-service does when it reconciles
// the Component (Onboard). Synchronous, so a test or the dev stack never races its
// own worker: the repository is the namespace's from the moment the Component
// exists. Dry runs onboard nothing.
func Onboarding(c client.Client) client.Client { return onboarding{c} }

type onboarding struct{ client.Client }

func (o onboarding) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := o.Client.Create(ctx, obj, opts...); err != nil {
		return err
	}
	co := client.CreateOptions{}
	co.ApplyOptions(opts)
	return o.onboard(ctx, obj, len(co.DryRun) > 0)
}

func (o onboarding) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := o.Client.Update(ctx, obj, opts...); err != nil {
		return err
	}
	uo := client.UpdateOptions{}
	uo.ApplyOptions(opts)
	return o.onboard(ctx, obj, len(uo.DryRun) > 0)
}

func (o onboarding) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := o.Client.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	po := client.PatchOptions{}
	po.ApplyOptions(opts)
	return o.onboard(ctx, obj, len(po.DryRun) > 0)
}

func (o onboarding) onboard(ctx context.Context, obj client.Object, dryRun bool) error {
	if dryRun {
		return nil
	}
	switch comp := obj.(type) {
	case *mirrorv1alpha1.Component:
		return Onboard(ctx, o.Client, comp)
	case *newmodel.Component:
		// build-service onboards new-model Components too (status.pac-repository).
		if comp.Spec.Source.URL == "" {
			return nil
		}
		return OnboardURL(ctx, o.Client, comp.Namespace, comp.Spec.Source.URL)
	}
	return nil
}
