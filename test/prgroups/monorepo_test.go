package prgroups_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	prgroupwf "github.com/nudgeflow/nudgeflow/workflows/prgroup"
)

const (
	bundleCSV = "bundle/manifests/operator.clusterserviceversion.yaml"
	bundlePLR = ".tekton/bundle-pull-request.yaml"
)

// pullRequestPipeline is a Konflux pull-request PipelineRun of component with its
// PaC annotations.
func pullRequestPipeline(component, cel string) string {
	return `apiVersion: tekton.dev/v1
kind: PipelineRun
metadata:
  name: ` + component + `-on-pull-request
  annotations:
    pipelinesascode.tekton.dev/max-keep-runs: "3"
    pipelinesascode.tekton.dev/on-cel-expression: ` + cel + `
  labels:
    appstudio.openshift.io/application: operator
    appstudio.openshift.io/component: ` + component + `
spec:
  pipelineRef:
    name: docker-build
`
}

// monorepo is ADR 29's third case: one repository holds the controller and the
// bundle; the controller nudges the bundle, whose pull-request pipeline builds on
// bundle/ and its own .tekton file only (bundleCEL).
func monorepo(t *testing.T, bundleCEL string) *scenario {
	s := newScenario(t)
	s.repo("operator", map[string]string{
		"cmd/main.go": "package main\n",
		bundleCSV:     "kind: ClusterServiceVersion\nspec:\n  relatedImages:\n  - name: controller\n    image: " + imageOf("controller") + "@" + digestOf("controller-0") + "\n",
		".tekton/controller-pull-request.yaml": pullRequestPipeline("controller",
			`'event == "pull_request" && target_branch == "main" && !"bundle/***".pathChanged()'`),
		bundlePLR: pullRequestPipeline("bundle", bundleCEL),
	})
	s.component("controller", "operator", "bundle")
	s.component("bundle", "operator")
	return s
}

// TestMonorepoSyntheticCommit: the controller PR changes cmd/main.go (outside the
// bundle's path filter) and the CSV (inside it). The bundle PR carries first a
// commit copying the CSV at the controller PR's head, then the digest commit
// rewritten on it; cmd/main.go is not copied. PaC builds the bundle PR once per
// update (the branch moves once). After the controller PR merges, the copy is on
// main and the bundle PR is one digest commit.
func TestMonorepoSyntheticCommit(t *testing.T) {
	s := monorepo(t, `'event == "pull_request" && target_branch == "main" && ("bundle/***".pathChanged() || ".tekton/bundle-pull-request.yaml".pathChanged())'`)
	const branch = "new-feature"
	csv1 := strings.Replace(emuMain(s, bundleCSV), "spec:\n", "metadata:\n  annotations:\n    feature: one\nspec:\n", 1)
	n, sha := s.openPR("operator", branch, map[string]string{"cmd/main.go": "package main // new feature\n", bundleCSV: csv1})
	s.prBuild("controller", "operator", branch, n, sha, digestOf("controller-pr-1"))

	target := branch + "@nudgeflow-bundle"
	pr := s.targetPR("operator", target, "a draft", draft)
	head, ok := emu.CommitOf(s.ns, "operator", pr.HeadSHA)
	require.True(t, ok)
	require.Len(t, head.Parents, 1)
	synth, ok := emu.CommitOf(s.ns, "operator", head.Parents[0])
	require.True(t, ok)
	mainHead, _ := emu.Head(s.ns, "operator", "main")
	require.Equal(t, []string{mainHead.SHA}, synth.Parents, "the synthetic commit sits on main's head")
	contains(t, synth.Message, "synthetic commit", s.ns+"/operator#1", bundleCSV)
	contains(t, head.Message, "chore(deps): update bundle")

	synthCSV, _ := emu.FileAt(s.ns, "operator", synth.SHA, bundleCSV)
	require.Equal(t, csv1, synthCSV, "the synthetic commit copies the CSV at the PR's head")
	headCSV := s.fileAt("operator", pr, bundleCSV)
	contains(t, headCSV, "feature: one", imageOf("controller")+"@"+digestOf("controller-pr-1"))
	require.Equal(t, "package main\n", s.fileAt("operator", pr, "cmd/main.go"), "outside the path filter: not copied")
	contains(t, pr.Body, "Synthetic commit (ADR 29): copied from "+s.ns+"/operator#1", "`"+bundleCSV+"`")
	require.NotContains(t, pr.Body, "cmd/main.go")
	require.Equal(t, 1, emu.CIBuildsForPR(s.ns, "operator", pr.Number), "opened: one build")

	// A new commit on the controller PR: a new copy and digest, one more build.
	csv2 := strings.Replace(csv1, "feature: one", "feature: two", 1)
	sha2 := s.pushCommit("operator", branch, map[string]string{bundleCSV: csv2})
	s.prBuild("controller", "operator", branch, n, sha2, digestOf("controller-pr-2"))
	pr = s.targetPR("operator", target, "the second copy and digest", func(p githubemu.PR) bool {
		csv, _ := emu.FileAt(s.ns, "operator", p.HeadSHA, bundleCSV)
		return draft(p) && strings.Contains(csv, "feature: two") && strings.Contains(csv, digestOf("controller-pr-2"))
	})
	// Every build PaC started is of a digest commit, never of a synthetic commit
	// alone: each update moved the branch once. (The new commit's webhook may
	// update the copy before its build's digest arrives: two updates, or one.)
	builds := 0
	for _, ev := range emu.CIEvents() {
		if ev.Repo != s.ns+"/operator" || ev.Number != pr.Number {
			continue
		}
		builds++
		c, _ := emu.CommitOf(s.ns, "operator", ev.HeadSHA)
		require.True(t, strings.HasPrefix(c.Message, "chore(deps): update bundle"), "PaC built %s: %q", ev.HeadSHA, c.Message)
	}
	require.Equal(t, builds, emu.CIBuildsForPR(s.ns, "operator", pr.Number))
	require.LessOrEqual(t, builds, 3)
	head, _ = emu.CommitOf(s.ns, "operator", pr.HeadSHA)
	synth, _ = emu.CommitOf(s.ns, "operator", head.Parents[0])
	require.Equal(t, []string{mainHead.SHA}, synth.Parents)

	// The controller PR merges: its change is on main; the bundle PR is one digest
	// commit on the new main, ready.
	require.NoError(t, emu.MergePR(s.ns, "operator", n))
	s.pushBuild("controller", emu.MergeSHA(s.ns, "operator", n), digestOf("controller-push-1"))
	pr = s.targetPR("operator", target, "ready with the push build", ready)
	head, _ = emu.CommitOf(s.ns, "operator", pr.HeadSHA)
	mainHead, _ = emu.Head(s.ns, "operator", "main")
	require.Equal(t, []string{mainHead.SHA}, head.Parents, "no synthetic commit once the originating PR merged")
	contains(t, s.fileAt("operator", pr, bundleCSV), "feature: two", digestOf("controller-push-1"))
	require.NotContains(t, pr.Body, "Synthetic commit")
	require.NoError(t, emu.MergePR(s.ns, "operator", pr.Number))
	require.Equal(t, prgroupwf.PhaseMerged, s.waitEnded(branch, "bundle").Phase)
}

// TestMonorepoUnevaluableExpression: the bundle's expression reads the webhook
// body, which nudgeflow does not have: the PR says so, nothing is copied, the
// digest is still proposed.
func TestMonorepoUnevaluableExpression(t *testing.T) {
	s := monorepo(t, `'event == "pull_request" && !body.pull_request.draft && "bundle/***".pathChanged()'`)
	const branch = "body-feature"
	n, sha := s.openPR("operator", branch, map[string]string{bundleCSV: emuMain(s, bundleCSV) + "# changed\n"})
	s.prBuild("controller", "operator", branch, n, sha, digestOf("controller-pr-body"))
	pr := s.targetPR("operator", branch+"@nudgeflow-bundle", "a draft", draft)
	contains(t, pr.Body, "synthetic commit", "is not made", "cannot be evaluated", "webhook payload")
	head, _ := emu.CommitOf(s.ns, "operator", pr.HeadSHA)
	mainHead, _ := emu.Head(s.ns, "operator", "main")
	require.Equal(t, []string{mainHead.SHA}, head.Parents, "no synthetic commit")
	csv := s.fileAt("operator", pr, bundleCSV)
	require.Contains(t, csv, digestOf("controller-pr-body"))
	require.NotContains(t, csv, "# changed")
}

func emuMain(s *scenario, path string) string {
	body, _ := emu.FileAt(s.ns, "operator", "main", path)
	return body
}
