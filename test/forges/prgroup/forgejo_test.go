package prgroup_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	"github.com/nudgeflow/nudgeflow/activities/prgroup"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/ownership/ownershiptest"
	"github.com/nudgeflow/nudgeflow/test/localenv"
)

const bundlePLR = `apiVersion: tekton.dev/v1
kind: PipelineRun
metadata:
  name: bundle-on-pull-request
  annotations:
    pipelinesascode.tekton.dev/on-event: "[pull_request]"
  labels:
    appstudio.openshift.io/component: bundle
spec:
  pipelineRef:
    name: docker-build
`

func digest(c string) string { return "sha256:" + strings.Repeat(c, 64) }

// On Forgejo/Gitea a PR group's target on a non-default revision gets its
// commits on that branch (not the default branch's head), the monorepo synthetic
// commit stays under the digest commit, and a second sync with nothing new writes
// nothing (no force-push, no CI run) — on the real Gitea server.
func TestForgejoPRGroupOnNonDefaultBase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	srv, err := localenv.StartForgejo(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })

	const owner, name = "acme", "mono"
	csvPath := "bundle/manifests/csv.yaml"
	require.NoError(t, srv.CreateRepo(owner, name, "main", map[string]string{
		csvPath:                  "image: quay.io/org/operand@" + digest("a") + "\n",
		".tekton/bundle-pr.yaml": bundlePLR,
		"operand/main.go":        "package main\n",
	}))
	require.NoError(t, srv.API(http.MethodPost, fmt.Sprintf("/repos/%s/%s/branches", owner, name), srv.HumanToken,
		map[string]string{"new_branch_name": "release-1", "old_branch_name": "main"}, nil))
	_, err = srv.HumanCommit(owner, name, "release-1", map[string]string{"operand/VERSION": "1\n"}, "release 1")
	require.NoError(t, err)
	_, err = srv.HumanCommit(owner, name, "main", map[string]string{"operand/VERSION": "2-dev\n"}, "main moves on")
	require.NoError(t, err)
	release, _ := srv.Head(owner, name, "release-1")
	mainHead, _ := srv.Head(owner, name, "main")
	require.NotEqual(t, release.SHA, mainHead.SHA)
	require.NoError(t, srv.WatchCI(owner, name))

	s := kube.NewScheme()
	repoURL := srv.URL + "/" + owner + "/" + name
	k8s := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "bundle", Namespace: "tenant",
			Annotations: map[string]string{mirrorv1alpha1.AnnotationGitProvider: "forgejo"}},
			Spec: mirrorv1alpha1.ComponentSpec{Source: mirrorv1alpha1.ComponentSource{
				GitSource: &mirrorv1alpha1.GitSource{URL: repoURL, Revision: "release-1"}}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scm", Namespace: "tenant",
			Labels: map[string]string{forge.LabelCredentials: "scm", forge.LabelSCMHost: "127.0.0.1"}},
			Type: corev1.SecretTypeBasicAuth,
			Data: map[string][]byte{"username": []byte(localenv.ForgejoBot), "password": []byte(srv.BotToken)}},
		// build-service's onboarding: the namespace owns the repository.
		ownershiptest.Repository("tenant", repoURL),
	).Build()
	a := &prgroup.Activities{Kube: k8s, PR: changegrouppr.New(k8s, changegrouppr.Config{Bot: forge.Signature{Name: "nudgeflow", Email: srv.BotEmail}})}
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(a.Sync)
	sync := func(req prgroup.SyncRequest) prgroup.SyncResult {
		t.Helper()
		v, err := env.ExecuteActivity(a.Sync, req)
		require.NoError(t, err)
		var res prgroup.SyncResult
		require.NoError(t, v.Get(&res))
		return res
	}
	builds := func() int {
		t.Helper()
		n, err := srv.CIBuilds(ctx, owner, name)
		require.NoError(t, err)
		return n
	}

	t.Run("digests only", func(t *testing.T) {
		req := prgroup.SyncRequest{Namespace: "tenant", Group: "g", Target: "bundle", Branch: "g@nudgeflow-bundle", Draft: true,
			Origins: []prgroup.Origin{{Key: "other/operand#1", State: "Open"}},
			Rows:    []prgroup.Row{{Component: "operand", Image: "quay.io/org/operand", Digest: digest("b"), From: "pull-request", Origin: "other/operand#1"}}}
		res := sync(req)
		require.Equal(t, prgroup.PROpen, res.State)
		pr, err := srv.PR(owner, name, res.PR.Number)
		require.NoError(t, err)
		require.Equal(t, "release-1", pr.Base.Ref, "the PR is on the component's revision")
		head, ok := srv.Head(owner, name, req.Branch)
		require.True(t, ok)
		require.Equal(t, []string{release.SHA}, head.Parents, "the digest commit is on the revision's head, not the default branch's")
		csv, _ := srv.FileAt(owner, name, req.Branch, csvPath)
		require.Contains(t, csv, digest("b"))
		v, _ := srv.FileAt(owner, name, req.Branch, "operand/VERSION")
		require.Equal(t, "1\n", v, "the branch holds the revision's files")

		before := builds()
		req.Known = res.PR
		again := sync(req)
		require.Zero(t, again.Writes, "nothing new: nothing written")
		head2, _ := srv.Head(owner, name, req.Branch)
		require.Equal(t, head.SHA, head2.SHA)
		require.Equal(t, before, builds(), "no CI run")
	})

	t.Run("monorepo synthetic commit", func(t *testing.T) {
		// A person's PR in the same repository, on the revision, changes the operand.
		require.NoError(t, srv.API(http.MethodPost, fmt.Sprintf("/repos/%s/%s/branches", owner, name), srv.HumanToken,
			map[string]string{"new_branch_name": "m@one", "old_branch_name": "release-1"}, nil))
		_, err := srv.HumanCommit(owner, name, "m@one", map[string]string{"operand/main.go": "package main // changed\n"}, "change the operand")
		require.NoError(t, err)
		var origin struct {
			Number int `json:"number"`
		}
		require.NoError(t, srv.API(http.MethodPost, fmt.Sprintf("/repos/%s/%s/pulls", owner, name), srv.HumanToken,
			map[string]string{"head": "m@one", "base": "release-1", "title": "change the operand"}, &origin))
		key := fmt.Sprintf("%s/%s#%d", owner, name, origin.Number)
		req := prgroup.SyncRequest{Namespace: "tenant", Group: "m", Target: "bundle", Branch: "m@nudgeflow-bundle", Draft: true,
			Origins: []prgroup.Origin{{Key: key, State: "Open"}},
			Rows:    []prgroup.Row{{Component: "operand", Image: "quay.io/org/operand", Digest: digest("c"), From: "pull-request", Origin: key}}}
		res := sync(req)
		require.True(t, res.Monorepo)
		head, ok := srv.Head(owner, name, req.Branch)
		require.True(t, ok)
		require.Len(t, head.Parents, 1)
		synth, err := srv.Commit(owner, name, head.Parents[0])
		require.NoError(t, err)
		require.Equal(t, []string{release.SHA}, synth.Parents, "the synthetic commit sits on the revision's head")
		require.Contains(t, synth.Message, "[skip ci]")
		got, _ := srv.FileAt(owner, name, req.Branch, "operand/main.go")
		require.Equal(t, "package main // changed\n", got, "the PR's change is copied into the branch")
		csv, _ := srv.FileAt(owner, name, req.Branch, csvPath)
		require.Contains(t, csv, digest("c"))

		before := builds()
		req.Known = res.PR
		again := sync(req)
		require.Zero(t, again.Writes, "both commits current: nothing written")
		head2, _ := srv.Head(owner, name, req.Branch)
		require.Equal(t, head.SHA, head2.SHA, "no force-push")
		require.Equal(t, before, builds(), "no CI run")
	})
}
