// Package prgroup_test runs the PR group activities against the forges.
package prgroup_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	"github.com/nudgeflow/nudgeflow/activities/prgroup"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	glforge "github.com/nudgeflow/nudgeflow/internal/forge/gitlab"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/ownership/ownershiptest"
	glemu "github.com/nudgeflow/nudgeflow/test/forgeemu/gitlab"
)

const glToken = "glpat-origin-reader-token-0000000000000"

// An originating PR on a self-hosted GitLab whose host does not say "gitlab"
// is read from GitLab, as the component's git-provider annotation says (the rest of
// nudgeflow reads it too), not from GitHub, where it would not be found.
func TestOriginOnSelfHostedForgeReadByGitProviderAnnotation(t *testing.T) {
	e := glemu.New()
	t.Cleanup(e.Close)
	e.AddToken(glToken, glemu.User{Username: "project_7_bot", Name: "nudgeflow", Email: "nudgeflow@example.com"})
	e.CreateProject("org", "operand", "main", map[string]string{"a.yaml": "v1\n"})
	repoURL := e.URL() + "/org/operand" // http://127.0.0.1:port: no forge in the host
	repo, err := forge.ParseRepoURL(repoURL)
	require.NoError(t, err)
	ctx := context.Background()
	c, err := glforge.New(ctx, forge.ClientOptions{Repo: repo, Token: glToken})
	require.NoError(t, err)
	base, _, err := c.BranchHead(ctx, "main")
	require.NoError(t, err)
	_, err = c.Push(ctx, forge.Push{Branch: "feature@one", Parent: base, Files: map[string][]byte{"a.yaml": []byte("v2\n")}, Message: "change"})
	require.NoError(t, err)
	mr, err := c.CreatePR(ctx, forge.NewPR{Title: "the origin", Head: "feature@one", Base: "main", Body: "b"})
	require.NoError(t, err)

	s := kube.NewScheme()
	k8s := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "operand", Namespace: "tenant",
			Annotations: map[string]string{mirrorv1alpha1.AnnotationGitProvider: "gitlab"}},
			Spec: mirrorv1alpha1.ComponentSpec{Source: mirrorv1alpha1.ComponentSource{
				GitSource: &mirrorv1alpha1.GitSource{URL: repoURL + ".git"}}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scm", Namespace: "tenant",
			Labels: map[string]string{forge.LabelCredentials: "scm", forge.LabelSCMHost: "127.0.0.1"}},
			Type: corev1.SecretTypeBasicAuth,
			Data: map[string][]byte{"username": []byte("oauth2"), "password": []byte(glToken)}},
		// build-service's onboarding: the namespace owns the repository.
		ownershiptest.Repository("tenant", repoURL),
	).Build()
	a := &prgroup.Activities{Kube: k8s, PR: changegrouppr.New(k8s, changegrouppr.Config{})}
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(a.ObserveOrigins)
	v, err := env.ExecuteActivity(a.ObserveOrigins, prgroup.ObserveRequest{Namespace: "tenant",
		Origins: []prgroup.OriginRef{{RepoURL: repoURL, Number: mr.Number}}})
	require.NoError(t, err)
	var obs []prgroup.OriginObservation
	require.NoError(t, v.Get(&obs))
	require.Len(t, obs, 1)
	require.Empty(t, obs[0].Error)
	require.True(t, obs[0].Found, "the merge request is found on GitLab")
	require.True(t, obs[0].Open)
	require.Equal(t, "the origin", obs[0].Title)
}
