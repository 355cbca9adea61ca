package devenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/ociregistry"
)

// Pipelines as Code's and Konflux's keys of a pull-request build (what
// bridge/prgroups reads).
const (
	keySourceBranch = "pipelinesascode.tekton.dev/source-branch"
	keyRepoURL      = "pipelinesascode.tekton.dev/repo-url"
	keySHA          = "pipelinesascode.tekton.dev/sha"
	keyPRNumber     = "build.appstudio.redhat.com/pull_request_number"
	keyCommitSHA    = "build.appstudio.redhat.com/commit_sha"
)

// PRBuildResult is what PRBuild did.
type PRBuildResult struct {
	BuildResult
	PR     int    // the originating PR's number
	PRURL  string // its web URL
	Opened bool   // PRBuild opened it
	SHA    string // the commit built
}

// ghAPI is the GitHub emulator's REST API as a person (the demo's maintainer).
type ghAPI struct{ base, token string }

func (g ghAPI) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(g.base, "/")+"/api/v3/"+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+g.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// openOrFindPR returns the open PR from branch in owner/repo, opening one (a commit
// adding a line to CHANGES.md on the base head) when there is none.
func (g ghAPI) openOrFindPR(ctx context.Context, owner, repo, branch, base string) (number int, sha, web string, opened bool, err error) {
	type pr struct {
		Number  int    `json:"number"`
		HTMLURL string `json:"html_url"`
		Head    struct {
			SHA string `json:"sha"`
		} `json:"head"`
	}
	p := "repos/" + url.PathEscape(owner) + "/" + url.PathEscape(repo)
	var prs []pr
	if err := g.do(ctx, http.MethodGet, p+"/pulls?state=open&head="+url.QueryEscape(owner+":"+branch), nil, &prs); err != nil {
		return 0, "", "", false, err
	}
	if len(prs) > 0 {
		return prs[0].Number, prs[0].Head.SHA, prs[0].HTMLURL, false, nil
	}
	var ref struct {
		Object struct {
			SHA string `json:"sha"`
		} `json:"object"`
	}
	if err := g.do(ctx, http.MethodGet, p+"/git/ref/heads/"+base, nil, &ref); err != nil {
		return 0, "", "", false, err
	}
	var parent struct {
		Tree struct {
			SHA string `json:"sha"`
		} `json:"tree"`
	}
	if err := g.do(ctx, http.MethodGet, p+"/git/commits/"+ref.Object.SHA, nil, &parent); err != nil {
		return 0, "", "", false, err
	}
	var tree, commit struct {
		SHA string `json:"sha"`
	}
	if err := g.do(ctx, http.MethodPost, p+"/git/trees", map[string]any{"base_tree": parent.Tree.SHA, "tree": []map[string]any{
		{"path": "CHANGES.md", "mode": "100644", "type": "blob", "content": "- " + branch + "\n"}}}, &tree); err != nil {
		return 0, "", "", false, err
	}
	if err := g.do(ctx, http.MethodPost, p+"/git/commits", map[string]any{"message": "Change on " + branch, "tree": tree.SHA,
		"parents": []string{ref.Object.SHA}}, &commit); err != nil {
		return 0, "", "", false, err
	}
	if err := g.do(ctx, http.MethodPost, p+"/git/refs", map[string]any{"ref": "refs/heads/" + branch, "sha": commit.SHA}, nil); err != nil {
		return 0, "", "", false, err
	}
	var created pr
	if err := g.do(ctx, http.MethodPost, p+"/pulls", map[string]any{"title": "Change on " + branch, "head": branch, "base": base}, &created); err != nil {
		return 0, "", "", false, err
	}
	return created.Number, commit.SHA, created.HTMLURL, true, nil
}

// PRBuild simulates a pull-request build of component on branch succeeding, as
// Pipelines as Code runs it: the originating PR is found in the GitHub emulator (or
// opened, as the demo's maintainer), and a succeeded build PipelineRun with PaC's
// pull_request annotations (source branch, PR number, repository, SHA) is created.
// build-service creates no nudge for a pull-request build; bridge/prgroups routes it.
func PRBuild(ctx context.Context, kube ctrlclient.Client, reg *ociregistry.Registry, forgeURL, token, ns, component, branch string) (*PRBuildResult, error) {
	var comp mirrorv1alpha1.Component
	if err := kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: component}, &comp); err != nil {
		return nil, fmt.Errorf("reading component %s/%s: %w", ns, component, err)
	}
	git := comp.Spec.Source.GitSource
	if git == nil || git.URL == "" {
		return nil, fmt.Errorf("component %s/%s has no spec.source.git.url", ns, component)
	}
	u, err := url.Parse(git.URL)
	fu, ferr := url.Parse(forgeURL)
	if err != nil || ferr != nil || u.Host != fu.Host {
		return nil, fmt.Errorf("component %s's repository %s is not on the GitHub emulator (%s)", component, git.URL, forgeURL)
	}
	owner, repo, _ := strings.Cut(strings.Trim(strings.TrimSuffix(u.Path, ".git"), "/"), "/")
	base := git.Revision
	if base == "" {
		base = "main"
	}
	g := ghAPI{base: forgeURL, token: token}
	n, sha, web, opened, err := g.openOrFindPR(ctx, owner, repo, branch, base)
	if err != nil {
		return nil, fmt.Errorf("the pull request from %s in %s/%s: %w", branch, owner, repo, err)
	}
	var builds tektonv1.PipelineRunList
	if err := kube.List(ctx, &builds, ctrlclient.InNamespace(ns), ctrlclient.MatchingLabels{
		konflux.LabelComponent: component, konflux.LabelPipelineType: "build"}); err != nil {
		return nil, fmt.Errorf("listing the builds of %s/%s: %w", ns, component, err)
	}
	k := len(builds.Items) + 1
	if comp.Spec.ContainerImage == "" {
		return nil, fmt.Errorf("component %s/%s has no spec.containerImage to push to", ns, component)
	}
	seed := buildSeed(ns, component+"@pr", k)
	res := &PRBuildResult{PR: n, PRURL: web, Opened: opened, SHA: sha, BuildResult: BuildResult{
		Build: fmt.Sprintf("%s-on-pull-request-%d", component, k), ImageURL: fmt.Sprintf("%s:on-pr-%s", comp.Spec.ContainerImage, sha)}}
	if res.Digest, err = pushBuiltImage(ctx, reg, res.ImageURL, seed); err != nil {
		return nil, err
	}
	plr := &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{Name: res.Build, Namespace: ns,
			Labels: map[string]string{konflux.LabelComponent: component, konflux.LabelPipelineType: "build",
				"appstudio.openshift.io/application": comp.Spec.Application},
			Annotations: map[string]string{konflux.AnnotationEventType: "pull_request", annotationImageSeed: seed, keySourceBranch: branch,
				keyPRNumber: fmt.Sprint(n), keyRepoURL: strings.TrimSuffix(git.URL, ".git"), keySHA: sha, keyCommitSHA: sha}},
		Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"}},
	}
	if err := kube.Create(ctx, plr); err != nil {
		return nil, fmt.Errorf("creating build PipelineRun %s/%s: %w", ns, res.Build, err)
	}
	if err := markBuildSucceeded(ctx, kube, plr, res.ImageURL, res.Digest, "simulated by nudgeflow-dev dev build --pr", metav1.Now()); err != nil {
		return nil, err
	}
	return res, nil
}

// PRBuildAsMaintainer is PRBuild in the environment running in home.
func PRBuildAsMaintainer(ctx context.Context, home string, kube ctrlclient.Client, ns, component, branch string) (*PRBuildResult, error) {
	r, err := ReadRunning(home)
	if err != nil {
		return nil, err
	}
	tok, err := loadTokens(home)
	if err != nil {
		return nil, err
	}
	reg, err := RegistryClient(home)
	if err != nil {
		return nil, err
	}
	return PRBuild(ctx, kube, reg, r.ForgeURL, tok.Maintainer, ns, component, branch)
}

// PushHead is the head of component's branch in the GitHub emulator of the
// environment running in home ("" when the component is elsewhere): what a
// simulated push build builds.
func PushHead(ctx context.Context, home string, kube ctrlclient.Client, ns, component string) string {
	r, err := ReadRunning(home)
	if err != nil {
		return ""
	}
	tok, err := loadTokens(home)
	if err != nil {
		return ""
	}
	var comp mirrorv1alpha1.Component
	if err := kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: component}, &comp); err != nil || comp.Spec.Source.GitSource == nil {
		return ""
	}
	git := comp.Spec.Source.GitSource
	u, err := url.Parse(git.URL)
	fu, ferr := url.Parse(r.ForgeURL)
	if err != nil || ferr != nil || u.Host != fu.Host {
		return ""
	}
	owner, repo, _ := strings.Cut(strings.Trim(strings.TrimSuffix(u.Path, ".git"), "/"), "/")
	branch := git.Revision
	if branch == "" {
		branch = "main"
	}
	var ref struct {
		Object struct {
			SHA string `json:"sha"`
		} `json:"object"`
	}
	if err := (ghAPI{base: r.ForgeURL, token: tok.Maintainer}).do(ctx, http.MethodGet,
		"repos/"+url.PathEscape(owner)+"/"+url.PathEscape(repo)+"/git/ref/heads/"+branch, nil, &ref); err != nil {
		return ""
	}
	return ref.Object.SHA
}
