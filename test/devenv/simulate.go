package devenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"knative.dev/pkg/apis"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/ociregistry"
)

// The simulator stands in for the Konflux services a local world lacks:
// build-service and Pipelines as Code (a push build that succeeded, and the nudge
// PipelineRun build-service creates for it) and integration-service (a Snapshot of
// a ComponentGroup whose tests passed or failed).

// BuildResult is what Build created.
type BuildResult struct {
	Build    string // the build PipelineRun
	Nudge    string // build-service's nudge PipelineRun ("" when it would create none)
	ImageURL string
	Digest   string
	// Succeeded is when the build was reported succeeded: just before its status
	// was written (a latency measured from it includes that write).
	Succeeded time.Time
}

// Build simulates the n-th push build of component succeeding, n counting the
// component's earlier simulated builds: a build PipelineRun with IMAGE_URL and
// IMAGE_DIGEST results and a Succeeded condition; and, when build-service would nudge
// (build-nudges-ref in a namespace without a NudgeConfig), its nudge PipelineRun.
// reg is the stack's registry, where the build pushes its image (nil: nowhere).
func Build(ctx context.Context, kube ctrlclient.Client, reg *ociregistry.Registry, ns, component string) (*BuildResult, error) {
	return BuildAt(ctx, kube, reg, ns, component, "")
}

// BuildAt is Build of commit sha (PaC's sha annotation; "" for none): the push
// build of a merge commit that a PR group waits for.
func BuildAt(ctx context.Context, kube ctrlclient.Client, reg *ociregistry.Registry, ns, component, sha string) (*BuildResult, error) {
	var comp mirrorv1alpha1.Component
	if err := kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: component}, &comp); err != nil {
		return nil, fmt.Errorf("reading component %s/%s: %w", ns, component, err)
	}
	var builds tektonv1.PipelineRunList
	if err := kube.List(ctx, &builds, ctrlclient.InNamespace(ns), ctrlclient.MatchingLabels{
		konflux.LabelComponent: component, konflux.LabelPipelineType: "build"}); err != nil {
		return nil, fmt.Errorf("listing the builds of %s/%s: %w", ns, component, err)
	}
	n := len(builds.Items) + 1
	if comp.Spec.ContainerImage == "" {
		return nil, fmt.Errorf("component %s/%s has no spec.containerImage to push to", ns, component)
	}
	seed := buildSeed(ns, component, n)
	res := &BuildResult{Build: fmt.Sprintf("%s-on-push-%d", component, n),
		ImageURL: fmt.Sprintf("%s:on-push-%d", comp.Spec.ContainerImage, n)}
	var err error
	if res.Digest, err = pushBuiltImage(ctx, reg, res.ImageURL, seed); err != nil {
		return nil, err
	}
	now := metav1.Now()
	plr := &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{Name: res.Build, Namespace: ns,
			Labels: map[string]string{konflux.LabelComponent: component, konflux.LabelPipelineType: "build",
				"appstudio.openshift.io/application": comp.Spec.Application},
			Annotations: map[string]string{konflux.AnnotationEventType: "push", annotationImageSeed: seed}},
		Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"}},
	}
	if sha != "" {
		plr.Annotations[keySHA], plr.Annotations[keyCommitSHA] = sha, sha
		// Pipelines as Code's repository of the event, beside its sha (every PaC
		// build has both): the nudge links the source from them.
		if git := comp.Spec.Source.GitSource; git != nil {
			plr.Annotations[keyRepoURL] = strings.TrimSuffix(git.URL, ".git")
		}
	}
	if err := kube.Create(ctx, plr); err != nil {
		return nil, fmt.Errorf("creating build PipelineRun %s/%s: %w", ns, res.Build, err)
	}
	res.Succeeded = time.Now()
	if err := markBuildSucceeded(ctx, kube, plr, res.ImageURL, res.Digest, "simulated by nudgeflow-dev dev build", now); err != nil {
		return nil, err
	}
	targets, err := buildServiceTargets(ctx, kube, &comp)
	if err != nil || len(targets) == 0 {
		return res, err
	}
	nudge := &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "renovate-pipeline-", Namespace: ns,
			Labels: map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue},
			Annotations: map[string]string{
				konflux.AnnotationNudging:    component,
				konflux.AnnotationNudged:     strings.Join(targets, " "),
				konflux.AnnotationNudgingPLR: res.Build,
				konflux.AnnotationNudgingImg: res.ImageURL,
			}},
		Spec: tektonv1.PipelineRunSpec{PipelineSpec: &tektonv1.PipelineSpec{Tasks: []tektonv1.PipelineTask{{Name: "renovate"}}}},
	}
	if err := kube.Create(ctx, nudge); err != nil {
		return nil, fmt.Errorf("creating build-service's nudge PipelineRun for %s: %w", res.Build, err)
	}
	res.Nudge = nudge.Name
	return res, nil
}

// markBuildSucceeded writes the status of a simulated build that succeeded at at:
// started and completed then, the Succeeded condition with message, and the
// IMAGE_URL and IMAGE_DIGEST results.
func markBuildSucceeded(ctx context.Context, kube ctrlclient.Client, plr *tektonv1.PipelineRun, imageURL, digest, message string, at metav1.Time) error {
	// The bridge may write the build's metadata meanwhile (it holds push builds of
	// components with edges until it has routed them): re-read and write again on a
	// conflict, as Tekton does.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := kube.Get(ctx, ctrlclient.ObjectKeyFromObject(plr), plr); err != nil {
			return err
		}
		konflux.SucceededBuild{ImageURL: imageURL, Digest: digest, Started: at.Time, Completed: at.Time, Message: message}.WriteStatus(plr)
		return kube.Status().Update(ctx, plr)
	})
	if err != nil {
		return fmt.Errorf("marking build PipelineRun %s/%s succeeded: %w", plr.Namespace, plr.Name, err)
	}
	return nil
}

// buildServiceTargets are the components build-service would nudge after a build:
// build-nudges-ref, unless the namespace has a NudgeConfig (then build-service
// leaves nudging to integration-service and nudgeflow).
func buildServiceTargets(ctx context.Context, kube ctrlclient.Client, comp *mirrorv1alpha1.Component) ([]string, error) {
	if len(comp.Spec.BuildNudgesRef) == 0 {
		return nil, nil
	}
	var nc konfluxv1alpha1.NudgeConfig
	err := kube.Get(ctx, ctrlclient.ObjectKey{Namespace: comp.Namespace, Name: konfluxv1alpha1.NudgeConfigName}, &nc)
	switch {
	case err == nil:
		return nil, nil
	case apierrors.IsNotFound(err):
		return comp.Spec.BuildNudgesRef, nil
	default:
		return nil, fmt.Errorf("reading the NudgeConfig of %s: %w", comp.Namespace, err)
	}
}

// Snapshot simulates integration-service finishing the tests of a ComponentGroup:
// a new Snapshot of the group holding each member's latest simulated build (its
// last promoted image when it has none), with AppStudioTestSucceeded set to passed.
// It returns the Snapshot's name.
func Snapshot(ctx context.Context, kube ctrlclient.Client, ns, group string, passed bool) (string, error) {
	var cg mirrorv1beta2.ComponentGroup
	if err := kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: group}, &cg); err != nil {
		return "", fmt.Errorf("reading ComponentGroup %s/%s: %w", ns, group, err)
	}
	snap := &mirrorv1alpha1.Snapshot{
		ObjectMeta: metav1.ObjectMeta{GenerateName: group + "-", Namespace: ns},
		Spec:       mirrorv1alpha1.SnapshotSpec{ComponentGroup: group},
	}
	for _, m := range cg.Spec.Components {
		image, err := latestImage(ctx, kube, ns, m.Name)
		if err != nil {
			return "", err
		}
		if image != "" {
			snap.Spec.Components = append(snap.Spec.Components, mirrorv1alpha1.SnapshotComponent{Name: m.Name, ContainerImage: image})
		}
	}
	if len(snap.Spec.Components) == 0 {
		return "", fmt.Errorf("ComponentGroup %s/%s has no component with an image: build one first", ns, group)
	}
	if err := kube.Create(ctx, snap); err != nil {
		return "", fmt.Errorf("creating a Snapshot of %s/%s: %w", ns, group, err)
	}
	cond := metav1.Condition{Type: mirrorv1alpha1.SnapshotTestSucceeded, Status: metav1.ConditionTrue, Reason: "Passed",
		Message: "All Integration Pipeline tests passed (simulated by nudgeflow-dev dev snapshot)"}
	if !passed {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Failed", "Some Integration Pipeline tests failed (simulated by nudgeflow-dev dev snapshot)"
	}
	meta.SetStatusCondition(&snap.Status.Conditions, cond)
	if err := kube.Status().Update(ctx, snap); err != nil {
		return "", fmt.Errorf("setting the test result of Snapshot %s/%s: %w", ns, snap.Name, err)
	}
	return snap.Name, nil
}

// latestImage is repo@digest of the component's newest succeeded build, else its
// last promoted image.
func latestImage(ctx context.Context, kube ctrlclient.Client, ns, component string) (string, error) {
	var builds tektonv1.PipelineRunList
	if err := kube.List(ctx, &builds, ctrlclient.InNamespace(ns), ctrlclient.MatchingLabels{
		konflux.LabelComponent: component, konflux.LabelPipelineType: "build"}); err != nil {
		return "", fmt.Errorf("listing the builds of %s/%s: %w", ns, component, err)
	}
	var best *tektonv1.PipelineRun
	for i := range builds.Items {
		b := &builds.Items[i]
		if b.Status.GetCondition(apis.ConditionSucceeded).IsTrue() && (best == nil || best.CreationTimestamp.Before(&b.CreationTimestamp) ||
			(best.CreationTimestamp.Equal(&b.CreationTimestamp) && buildNumber(best.Name) < buildNumber(b.Name))) {
			best = b
		}
	}
	if best != nil {
		var imageURL, digest string
		for _, r := range best.Status.Results {
			switch r.Name {
			case konflux.ResultImageURL:
				imageURL = r.Value.StringVal
			case konflux.ResultImageDigest:
				digest = r.Value.StringVal
			}
		}
		if imageURL != "" && digest != "" {
			return digestref.PullSpec(imageURL, digest), nil
		}
	}
	var comp mirrorv1alpha1.Component
	if err := kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: component}, &comp); err != nil {
		return "", ctrlclient.IgnoreNotFound(err)
	}
	return comp.Status.LastPromotedImage, nil
}

func buildNumber(name string) int {
	_, n, _ := strings.Cut(name, "-on-push-")
	i, _ := strconv.Atoi(n)
	return i
}

// PRRef names a pull (or merge) request as `nudgeflow-dev dev merge` takes it.
type PRRef struct {
	// Base is scheme://host of a web URL ("" for OWNER/REPO#N).
	Base        string
	Owner, Repo string
	Number      int
}

func (r PRRef) String() string { return fmt.Sprintf("%s/%s#%d", r.Owner, r.Repo, r.Number) }

var (
	// OWNER/REPO#N, or OWNER/REPO!N as GitLab writes a merge request.
	prShortRef = regexp.MustCompile(`^([^#!\s]+)/([^/#!\s]+)[#!](\d+)$`)
	// GitHub's /pull/N, Gitea's and Forgejo's /pulls/N, GitLab's /-/merge_requests/N
	// (whose owner may hold subgroups).
	prWebURL = regexp.MustCompile(`^(https?://[^/]+)/(.+)/([^/]+)/(?:pull|pulls|-/merge_requests)/(\d+)/?$`)
)

// ParsePR reads "owner/repo#N" or a pull (merge) request's web URL on any forge.
func ParsePR(ref string) (PRRef, error) {
	ref = strings.TrimSpace(ref)
	if m := prWebURL.FindStringSubmatch(ref); m != nil {
		n, _ := strconv.Atoi(m[4])
		return PRRef{Base: m[1], Owner: m[2], Repo: m[3], Number: n}, nil
	}
	if m := prShortRef.FindStringSubmatch(ref); m != nil {
		n, _ := strconv.Atoi(m[3])
		return PRRef{Owner: m[1], Repo: m[2], Number: n}, nil
	}
	return PRRef{}, fmt.Errorf("%q is not a pull request: give OWNER/REPO#N or its URL", ref)
}

// Merge merges a pull request in the emulator through GitHub's REST API, as the
// demo's maintainer.
func Merge(ctx context.Context, forgeURL, token, owner, repo string, number int) (string, error) {
	u := fmt.Sprintf("%s/api/v3/repos/%s/%s/pulls/%d/merge", strings.TrimSuffix(forgeURL, "/"), url.PathEscape(owner), url.PathEscape(repo), number)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, strings.NewReader("{}"))
	if err != nil {
		return "", fmt.Errorf("merging %s/%s#%d: %w", owner, repo, number, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("merging %s/%s#%d: %w", owner, repo, number, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		SHA     string `json:"sha"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(body, &out)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("merging %s/%s#%d: %s: %s", owner, repo, number, resp.Status, out.Message)
	}
	return out.SHA, nil
}

// MergeAsMaintainer merges a pull (merge) request of the environment running in
// home as the demo's person, on whichever forge holds it. The forge is the one of
// the Component whose repository it is, told as the worker tells it (the
// git-provider annotation, else the host; GitHub when neither says); a repository
// no Component names is on the GitHub emulator unless its URL says otherwise.
func MergeAsMaintainer(ctx context.Context, home string, kube ctrlclient.Client, ns string, ref PRRef) (string, error) {
	r, err := ReadRunning(home)
	if err != nil {
		return "", err
	}
	tok, err := loadTokens(home)
	if err != nil {
		return "", err
	}
	provider, base, err := forgeOf(ctx, kube, ns, r, ref)
	if err != nil {
		return "", err
	}
	switch provider {
	case forge.ProviderGitLab:
		return mergeGitLab(ctx, base, tok.Maintainer, ref)
	case forge.ProviderForgejo:
		users, err := localenv.ReadForgejoUsers(filepath.Join(home, dirForgejo))
		if err != nil {
			return "", fmt.Errorf("merging %s on Forgejo (is `nudgeflow-dev dev --forgejo` running?): %w", ref, err)
		}
		return mergeForgejo(ctx, base, users[localenv.ForgejoHuman], ref)
	default:
		return Merge(ctx, base, tok.Maintainer, ref.Owner, ref.Repo, ref.Number)
	}
}

// forgeOf finds the forge and its base URL of ref's repository.
func forgeOf(ctx context.Context, kube ctrlclient.Client, ns string, r *Running, ref PRRef) (provider, base string, err error) {
	var comps mirrorv1alpha1.ComponentList
	if err := kube.List(ctx, &comps, ctrlclient.InNamespace(ns)); err != nil {
		return "", "", fmt.Errorf("listing the Components of %s to find the forge of %s: %w", ns, ref, err)
	}
	for _, c := range comps.Items {
		git := c.Spec.Source.GitSource
		if git == nil {
			continue
		}
		repo, err := forge.ParseRepoURL(git.URL)
		if err != nil || repo.Owner != ref.Owner || repo.Name != ref.Repo {
			continue
		}
		b := repo.Scheme + "://" + repo.Host
		if ref.Base != "" && ref.Base != b {
			continue
		}
		// The worker's rule (changegroupcr's repoOf).
		return forge.ProviderOrGitHub(c.Annotations[mirrorv1alpha1.AnnotationGitProvider], repo.Host), b, nil
	}
	switch {
	case ref.Base == "" || ref.Base == r.ForgeURL:
		return forge.ProviderGitHub, r.ForgeURL, nil
	case ref.Base == r.GitLabURL:
		return forge.ProviderGitLab, ref.Base, nil
	case r.ForgejoURL != "" && ref.Base == r.ForgejoURL:
		return forge.ProviderForgejo, ref.Base, nil
	}
	return "", "", fmt.Errorf("%s/%s is on %s, none of the forges of this environment", ref.Owner, ref.Repo, ref.Base)
}

// forgeCall sends one JSON request and decodes the answer's JSON into out; a
// status of 300 or more is an *httpStatusError with the server's message.
func forgeCall(ctx context.Context, method, u string, header http.Header, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = strings.NewReader(string(b))
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	req.Header = header.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		var e struct {
			Message any `json:"message"`
		}
		_ = json.Unmarshal(data, &e)
		return &httpStatusError{status: resp.StatusCode, text: resp.Status, message: fmt.Sprint(e.Message)}
	}
	if out != nil && len(data) > 0 {
		return json.Unmarshal(data, out)
	}
	return nil
}

type httpStatusError struct {
	status        int
	text, message string
}

func (e *httpStatusError) Error() string { return e.text + ": " + e.message }

// mergeGitLab merges a merge request through GitLab's REST API (the emulator).
func mergeGitLab(ctx context.Context, base, token string, ref PRRef) (string, error) {
	var mr struct {
		SHA            string `json:"sha"`
		MergeCommitSHA string `json:"merge_commit_sha"`
	}
	u := fmt.Sprintf("%s/api/v4/projects/%s/merge_requests/%d/merge", strings.TrimSuffix(base, "/"),
		url.PathEscape(ref.Owner+"/"+ref.Repo), ref.Number)
	if err := forgeCall(ctx, http.MethodPut, u, http.Header{"Private-Token": {token}}, map[string]any{}, &mr); err != nil {
		return "", fmt.Errorf("merging %s on GitLab: %w", ref, err)
	}
	if mr.MergeCommitSHA != "" {
		return mr.MergeCommitSHA, nil
	}
	return mr.SHA, nil
}

// mergeForgejo merges a pull request through the Gitea/Forgejo API as the person.
// The server checks a PR's mergeability in the background after each push and
// answers 405 until it has: that is retried until a deadline (a work-in-progress
// PR stays 405 and fails with the server's message).
func mergeForgejo(ctx context.Context, base, token string, ref PRRef) (string, error) {
	api := strings.TrimSuffix(base, "/") + fmt.Sprintf("/api/v1/repos/%s/%s/pulls/%d", url.PathEscape(ref.Owner), url.PathEscape(ref.Repo), ref.Number)
	header := http.Header{"Authorization": {"token " + token}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := forgeCall(ctx, http.MethodPost, api+"/merge", header, map[string]any{"Do": "merge"}, nil)
		if err == nil {
			break
		}
		var se *httpStatusError
		if !errors.As(err, &se) || se.status != http.StatusMethodNotAllowed || time.Now().After(deadline) {
			return "", fmt.Errorf("merging %s on Forgejo: %w", ref, err)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("merging %s on Forgejo: %w (last answer: %v)", ref, context.Cause(ctx), err)
		case <-time.After(500 * time.Millisecond):
		}
	}
	var pr struct {
		MergeCommitSHA string `json:"merge_commit_sha"`
	}
	if err := forgeCall(ctx, http.MethodGet, api, header, nil, &pr); err != nil {
		return "", fmt.Errorf("reading %s on Forgejo after merging it: %w", ref, err)
	}
	return pr.MergeCommitSHA, nil
}
