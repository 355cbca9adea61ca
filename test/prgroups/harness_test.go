package prgroups_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/converter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/prgroups"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
	prgroupwf "github.com/nudgeflow/nudgeflow/workflows/prgroup"
)

// scenario is one namespace: repositories in the emulator, Components, forge
// credentials, and the builds Pipelines as Code would run.
type scenario struct {
	t      *testing.T
	w      *world.World
	ns     string
	builds int
}

func newScenario(t *testing.T) *scenario {
	w := world.Get(t)
	s := &scenario{t: t, w: w, ns: w.Namespace(t)}
	require.NoError(t, w.Kube.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "forge", Namespace: s.ns, Labels: map[string]string{
			forge.LabelCredentials: "scm", forge.LabelSCMHost: "127.0.0.1"}},
		Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{"username": []byte("nudgeflow"), "password": []byte(forgeToken)},
	}))
	return s
}

func digestOf(s string) string { return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(s))) }

func imageOf(component string) string { return "quay.io/org/" + component }

func (s *scenario) repoURL(repo string) string { return emu.URL() + "/" + s.ns + "/" + repo }

// repo creates a repository on main.
func (s *scenario) repo(name string, files map[string]string) {
	emu.CreateRepo(s.ns, name, "main", files)
}

// component creates a Component of repo nudging the targets (build-nudges-ref).
func (s *scenario) component(name, repo string, nudges ...string) {
	require.NoError(s.t, s.w.Kube.Create(context.Background(), &mirrorv1alpha1.Component{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns, Annotations: map[string]string{mirrorv1alpha1.AnnotationGitProvider: "github"}},
		Spec: mirrorv1alpha1.ComponentSpec{ContainerImage: imageOf(name), BuildNudgesRef: nudges,
			Source: mirrorv1alpha1.ComponentSource{GitSource: &mirrorv1alpha1.GitSource{URL: s.repoURL(repo), Revision: "main"}}},
	}))
}

// openPR is a developer proposing a change on branch.
func (s *scenario) openPR(repo, branch string, files map[string]string) (int, string) {
	n, sha, err := emu.OpenPR(s.ns, repo, branch, "main", human, files, "change on "+branch)
	require.NoError(s.t, err)
	return n, sha
}

// pushCommit is a developer pushing a new commit to a PR's branch.
func (s *scenario) pushCommit(repo, branch string, files map[string]string) string {
	sha, err := emu.HumanCommit(s.ns, repo, branch, human, files, "more on "+branch)
	require.NoError(s.t, err)
	return sha
}

// build creates a succeeded build PipelineRun as PaC and Tekton would.
func (s *scenario) build(component string, annotations map[string]string, digest string) *tektonv1.PipelineRun {
	s.t.Helper()
	ctx := context.Background()
	s.builds++
	plr := &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-build-%d", component, s.builds), Namespace: s.ns,
			Labels:      map[string]string{konflux.LabelComponent: component, konflux.LabelPipelineType: "build"},
			Annotations: annotations},
		Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"}},
	}
	require.NoError(s.t, s.w.Kube.Create(ctx, plr))
	require.NoError(s.t, world.SetStatus(ctx, s.w.Kube, plr, func() {
		now := time.Now()
		konflux.SucceededBuild{ImageURL: imageOf(component) + ":tag", Digest: digest, Started: now, Completed: now}.WriteStatus(plr)
	}))
	return plr
}

// prBuild is the pull-request build of component for PR number at sha.
func (s *scenario) prBuild(component, repo, branch string, number int, sha, digest string) {
	s.build(component, map[string]string{
		konflux.AnnotationEventType:  "pull_request",
		prgroups.KeySourceBranch:     branch,
		prgroups.AnnotationPRNumber:  fmt.Sprint(number),
		prgroups.KeyRepoURL:          s.repoURL(repo),
		prgroups.KeySHA:              sha,
		prgroups.AnnotationCommitSHA: sha,
	}, digest)
}

// pushBuild is the push build of component for a commit on main.
func (s *scenario) pushBuild(component, sha, digest string) *tektonv1.PipelineRun {
	return s.build(component, map[string]string{konflux.AnnotationEventType: "push", prgroups.KeySHA: sha}, digest)
}

// originEvents lists the origin events signalled to the group's latest run.
func (s *scenario) originEvents(group, target string) []prgroupwf.OriginEvent {
	s.t.Helper()
	id := prgroupwf.WorkflowID(s.ns, group, target)
	it := s.w.TemporalClient.GetWorkflowHistory(context.Background(), id, "", false, 0)
	var out []prgroupwf.OriginEvent
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(s.t, err, "reading the history of %s", id)
		a := e.GetWorkflowExecutionSignaledEventAttributes()
		if a.GetSignalName() != prgroupwf.SignalOriginEvent {
			continue
		}
		for _, p := range a.GetInput().GetPayloads() {
			var ev prgroupwf.OriginEvent
			require.NoError(s.t, converter.GetDefaultDataConverter().FromPayload(p, &ev))
			out = append(out, ev)
		}
	}
	return out
}

// targetPR waits for the newest PR on branch in repo matching cond.
func (s *scenario) targetPR(repo, branch, what string, cond func(githubemu.PR) bool) githubemu.PR {
	s.t.Helper()
	var found githubemu.PR
	world.Eventually(s.t, 60*time.Second, fmt.Sprintf("PR on %s/%s: %s", repo, branch, what), func() (bool, error) {
		var last *githubemu.PR
		for _, p := range emu.PRs(s.ns, repo) {
			if p.Head == branch {
				last = &p
			}
		}
		if last == nil {
			return false, fmt.Errorf("no PR on %s", branch)
		}
		found = *last
		if cond(found) {
			return true, nil
		}
		return false, fmt.Errorf("PR #%d: state %s, draft %v, merged %v", found.Number, found.State, found.Draft, found.Merged)
	})
	return found
}

// fileAt reads a file at the head of a PR.
func (s *scenario) fileAt(repo string, pr githubemu.PR, path string) string {
	body, ok := emu.FileAt(s.ns, repo, pr.HeadSHA, path)
	require.True(s.t, ok, "%s at %s", path, pr.HeadSHA)
	return body
}

func (s *scenario) query(group, target string) prgroupwf.State {
	s.t.Helper()
	v, err := s.w.TemporalClient.QueryWorkflow(context.Background(), prgroupwf.WorkflowID(s.ns, group, target), "", prgroupwf.QueryState)
	require.NoError(s.t, err)
	var st prgroupwf.State
	require.NoError(s.t, v.Get(&st))
	return st
}

// waitEnded waits for the group's workflow to end and returns its final state.
func (s *scenario) waitEnded(group, target string) prgroupwf.State {
	s.t.Helper()
	var st prgroupwf.State
	run := s.w.TemporalClient.GetWorkflow(context.Background(), prgroupwf.WorkflowID(s.ns, group, target), "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(s.t, run.Get(ctx, &st))
	return st
}

// record stores the ended workflow's history for the replay tests (only with
// NUDGEFLOW_RECORD_HISTORIES set).
func (s *scenario) record(group, target string) {
	s.w.RecordHistory(s.t, filepath.Join(localenv.RepoRoot(), "workflows", "prgroup", "testdata"),
		s.t.Name()+"@"+prgroupwf.HistoryShape, prgroupwf.WorkflowID(s.ns, group, target))
}

// noPushPathNudges: pull-request builds never start the push path's nudges.
func (s *scenario) noPushPathNudges() {
	s.t.Helper()
	var plrs tektonv1.PipelineRunList
	require.NoError(s.t, s.w.Kube.List(context.Background(), &plrs, ctrlclient.InNamespace(s.ns),
		ctrlclient.MatchingLabels{konflux.LabelNudgeType: konflux.NudgeTypeValue}))
	require.Empty(s.t, plrs.Items, "a pull-request build launched a Renovate nudge")
}

func contains(t *testing.T, text string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		require.True(t, strings.Contains(text, p), "want %q in:\n%s", p, text)
	}
}
