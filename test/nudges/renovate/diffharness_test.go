package renovate_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/ownership/ownershiptest"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	"github.com/nudgeflow/nudgeflow/test/landingforge"
	"github.com/nudgeflow/nudgeflow/test/plrunner"
)

// The differential test's world: the contract test's API server, runner and
// registry, one real Gitea, and two tenants (namespaces) set up alike, each
// owning an organisation of the same repositories on that Gitea. One tenant's
// nudges are written by the Renovate PipelineRun nudgeflow launches
// (LaunchRenovate, run by test/plrunner with the pinned Renovate), the other's
// by the direct writer. Everything a writer reads (the nudged Component, its
// ConfigMap tier, the ReleasePlanAdmission, the SCM Secret, the trusted CA) is
// the same in both, so the two organisations' repositories must end the same.

const (
	// diffOperatorNamespace is the worker's namespace in this world: the trusted
	// CA bundle (the registry's CA) is looked for there.
	diffOperatorNamespace = "nudgeflow-diff"
	// diffManagedNamespace holds the ReleasePlanAdmissions of both tenants.
	diffManagedNamespace = "diff-managed"
	// diffNudging is the nudging component of every case.
	diffNudging = "operand"
	// diffReleased is where diffNudging's images are released (its
	// ReleasePlanAdmission's repository, in both tenants).
	diffReleased = "registry.example.com/released/operand"
	// diffExtraLabel is a label the tenant's ConfigMap adds (case tenant-config).
	diffExtraLabel = "team-nudges"
)

// The sides of the comparison, by their writer.
const (
	sideRenovate = "renovate"
	sideDirect   = "direct"
)

// side is one tenant: its namespace (also its organisation on the forge) and
// the writer that writes its nudges.
type side struct {
	name  string // sideRenovate or sideDirect
	ns    string
	write writeFunc
	forge diffForge
}

// diffNudge is one build to write: a build of diffNudging for the nudged
// component (one per case, its repository named like it).
type diffNudge struct {
	// ID is unique in the case: the Nudge's workflow ID ends with it.
	ID     string
	Nudged string
	Image  string // repo:tag
	Digest string
	// BuiltAt is the build's start; later builds start later.
	BuiltAt time.Time
	// NudgeFiles is the build's build-nudge-files annotation ("" for none).
	NudgeFiles string
}

// written is what a writer says it did, for the log (the forge is what is compared).
type written struct {
	Outcome string
	Detail  string
	// PR, Branch and Files: what the direct writer reports (nudgewriteapi.WriteResult).
	PR     int
	Branch string
	Files  []string
}

// writeFunc writes n in s's tenant and returns when the forge holds what it wrote.
type writeFunc func(ctx context.Context, t *testing.T, d *diffWorld, s *side, n diffNudge) (written, error)

// diffWorld is the shared world and a client of nudgeflow's kinds.
type diffWorld struct {
	w    *world
	kube ctrlclient.Client
}

// forgePair is one forge and its two tenants, set up alike.
type forgePair struct {
	forge diffForge
	sides []*side
}

// build is n's build as the Nudge workflow hands it to either writer.
func (d *diffWorld) build(n diffNudge) imagebuild.Build {
	repo, _, _ := cutLast(n.Image, ":")
	return imagebuild.Build{
		Image: repo, ImageURL: n.Image, Digest: n.Digest, PullSpec: repo + "@" + n.Digest,
		BuildPipelineRun: diffNudging + "-on-push-" + n.ID, BuildUID: "uid-" + n.Nudged + "-" + n.ID,
		BuiltAt: n.BuiltAt, CommitSHA: strings.Repeat("ab", 20), RepoAtSHA: repoAtSHA(diffNudging), NudgeFiles: n.NudgeFiles,
	}
}

func newDiffWorld(t *testing.T) *diffWorld {
	t.Helper()
	w := sharedWorld(t)
	c, err := ctrlclient.New(w.Config(), ctrlclient.Options{Scheme: kube.NewScheme()})
	require.NoError(t, err)
	d := &diffWorld{w: w, kube: c}
	for _, ns := range []string{diffOperatorNamespace, diffManagedNamespace} {
		d.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	// The cluster's trusted bundle holds the registry's CA, as a cluster's
	// holds its registries' (Renovate's run mounts it; the direct writer reads
	// no registry; the forges here serve plain http).
	d.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "trusted-ca", Namespace: diffOperatorNamespace,
		Labels: map[string]string{renovate.LabelInjectTrustedCABundle: "true"}},
		Data: map[string]string{renovate.CABundleKey: string(w.ca.PEM)}})
	return d
}

// pair makes forge's two tenants, diff-<forge>-renovate and diff-<forge>-direct
// (also their organisations on the forge), alike: the SCM Secret for the
// forge's host, the nudging Component, its ReleasePlanAdmission.
func (d *diffWorld) pair(t *testing.T, forge diffForge, direct writeFunc) *forgePair {
	t.Helper()
	p := &forgePair{forge: forge, sides: []*side{
		{name: sideRenovate, ns: "diff-" + forge.Name() + "-renovate", write: writeRenovate, forge: forge},
		{name: sideDirect, ns: "diff-" + forge.Name() + "-direct", write: direct, forge: forge}}}
	u, err := url.Parse(forge.RepoURL("o", "r"))
	require.NoError(t, err)
	for _, s := range p.sides {
		d.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}})
		// The tenant's SCM Secret: the forge bot's token, for the forge's host.
		d.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scm-" + forge.Name(), Namespace: s.ns, Labels: map[string]string{
			credentials.LabelCredentials: credentials.LabelCredentialsSCM, credentials.LabelSCMHost: u.Hostname()}},
			Type: corev1.SecretTypeBasicAuth,
			Data: map[string][]byte{corev1.BasicAuthUsernameKey: []byte(forge.Username()), corev1.BasicAuthPasswordKey: []byte(forge.Token())}})
		d.create(t, &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: diffNudging, Namespace: s.ns},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: diffNudging, ContainerImage: d.w.registry.Host + "/diff/" + diffNudging}})
		// diffNudging is released to diffReleased: both writers rewrite that name too.
		data, err := json.Marshal(map[string]any{"mapping": map[string]any{"components": []any{map[string]any{
			"name": diffNudging, "repositories": []any{map[string]string{"url": diffReleased}}}}}})
		require.NoError(t, err)
		d.create(t, &mirrorv1alpha1.ReleasePlanAdmission{ObjectMeta: metav1.ObjectMeta{Name: "release-" + s.ns, Namespace: diffManagedNamespace},
			Spec: mirrorv1alpha1.ReleasePlanAdmissionSpec{Origin: s.ns, Data: &runtime.RawExtension{Raw: data}}})
	}
	return p
}

func (d *diffWorld) create(t *testing.T, obj ctrlclient.Object) {
	t.Helper()
	err := d.kube.Create(context.Background(), obj)
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err, "create %T %s/%s", obj, obj.GetNamespace(), obj.GetName())
	}
}

// repoSpec is one case's nudged repository, created alike in both tenants.
type repoSpec struct {
	Name  string // the repository and the nudged component
	Files map[string]string
	// ConfigMap, when set, is the nudged component's own Renovate ConfigMap tier
	// (the component annotation names it).
	ConfigMap map[string]string
}

// setUp creates the repository in both organisations, its labels, the nudged
// Component (onboarded: the tenant owns the repository) and its ConfigMap.
func (d *diffWorld) setUp(t *testing.T, p *forgePair, r repoSpec) {
	t.Helper()
	for _, s := range p.sides {
		p.forge.CreateRepo(t, s.ns, r.Name, "main", r.Files)
		for _, l := range []string{renovate.NudgeLabel, diffExtraLabel} {
			p.forge.CreateLabel(t, s.ns, r.Name, l)
		}
		annotations := map[string]string{mirrorv1alpha1.AnnotationGitProvider: p.forge.Platform()}
		if r.ConfigMap != nil {
			cm := r.Name + "-renovate"
			d.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm, Namespace: s.ns}, Data: r.ConfigMap})
			annotations = konflux.NudgeRenovateConfigMapKey.Set(annotations, cm)
		}
		gitURL := p.forge.RepoURL(s.ns, r.Name)
		d.create(t, &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: s.ns, Annotations: annotations},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: r.Name, ContainerImage: d.w.registry.Host + "/diff/" + r.Name,
				Source: mirrorv1alpha1.ComponentSource{GitSource: &mirrorv1alpha1.GitSource{URL: gitURL, Revision: "main"}}}})
		require.NoError(t, ownershiptest.OnboardURL(context.Background(), d.kube, s.ns, gitURL))
	}
}

// writeRenovate is the Renovate path: nudgeflow's LaunchRenovate activity
// creates and releases the PipelineRun (reading the tenant's objects as in a
// cluster), test/plrunner runs it with the pinned Renovate, and the run's end
// is waited for. A run that fails is an error.
func writeRenovate(ctx context.Context, t *testing.T, d *diffWorld, s *side, n diffNudge) (written, error) {
	select {
	case d.w.slots <- struct{}{}:
	case <-time.After(runTimeout):
		return written{}, fmt.Errorf("no Renovate slot free within %s", runTimeout)
	}
	defer func() { <-d.w.slots }()
	workflowID := "nudge-" + n.Nudged + "-" + n.ID
	req := renovateapi.LaunchRequest{Namespace: s.ns, Name: renovateapi.RunName(workflowID, 1), WorkflowID: workflowID, Attempt: 1,
		Nudging: diffNudging, Nudged: n.Nudged, Build: d.build(n)}
	a := &renovate.Activities{Kube: d.kube, OperatorNamespace: diffOperatorNamespace}
	ae := activityEnv(t)
	ae.RegisterActivityWithOptions(a.LaunchRenovate, activity.RegisterOptions{Name: renovateapi.LaunchActivity})
	if _, err := ae.ExecuteActivity(renovateapi.LaunchActivity, req); err != nil {
		// An older build than the one the nudge branch's run carries: the
		// launch refuses it (supersede.go) and nothing is written, the Renovate
		// path's answer to a late build.
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == renovateapi.ErrorTypeSuperseded {
			return written{Outcome: "superseded", Detail: "launch refused: " + appErr.Message()}, nil
		}
		return written{}, fmt.Errorf("LaunchRenovate: %w", err)
	}
	plr, err := plrunner.WaitFor(ctx, d.w.Client, s.ns, req.Name, runTimeout, plrunner.Ended)
	logPath := d.w.Runner.LogPath(s.ns, req.Name)
	if err != nil {
		return written{}, fmt.Errorf("run %s: %w (log %s)", req.Name, err, logPath)
	}
	st := renovaterun.StatusOf(plr)
	outcome := ""
	for _, r := range plr.Status.Results {
		if r.Name == renovaterun.ResultOutcome {
			outcome = r.Value.StringVal
		}
	}
	if !st.Done || !st.Succeeded {
		return written{}, fmt.Errorf("run %s did not succeed: %+v (log %s)\n%s", req.Name, st, logPath, tail(d.w.Runner.ReadLog(s.ns, req.Name), 40))
	}
	return written{Outcome: outcome, Detail: fmt.Sprintf("run %s reason=%s log %s", req.Name, st.Reason, logPath)}, nil
}

// activityEnv runs one activity as a worker would, its log going to t's.
func activityEnv(t *testing.T) *testsuite.TestActivityEnvironment {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(testLogWriter{t}, nil))))
	return suite.NewTestActivityEnvironment()
}

// testLogWriter writes each line to t's log (shown with -v or on failure).
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// ---- what is read back ----

// commitShot is one commit of the nudge branch above the base.
type commitShot struct {
	AuthorName, AuthorEmail, CommitterName, CommitterEmail string
	Subject, Body                                          string
}

// prShot is one pull request, its branch and the branch's whole tree.
type prShot struct {
	Number        int
	State         string
	Branch, Base  string
	Title, Body   string
	Labels        []string
	Draft, Merged bool
	// Timeline is the pull request's events as the forge lists them (their
	// types and who made them, a comment's text too): a scheduled auto-merge,
	// label and title changes, pushes, comments.
	Timeline       []string
	Commits        []commitShot      // above the base branch's head, oldest first
	Tree           map[string]string // every file at the branch's head
	HeadSHA        string
	SameAsPrevious bool // the PR the previous step read (same number)
}

// repoShot is what a repository shows after a step: its pull requests and the
// branches besides main.
type repoShot struct {
	PRs      []prShot
	Branches []string
}

// diffForge is a forge the test reads both tenants' repositories from, through
// its REST API (Gitea's and GitHub's share the git data and pull request
// calls), and where a person acts.
type diffForge interface {
	landingforge.Forge
	// get sends one GET of the forge's REST API (path from "/repos/…") and
	// decodes the answer into out.
	get(path string, out any) error
	// branches lists the repository's branches (base is "/repos/<owner>/<name>")
	// and main's head.
	branches(base string) (names []string, mainHead string, err error)
	// timeline lists pull request number's events as comparable lines, once
	// the forge has recorded head.
	timeline(base string, number int, head string) ([]string, error)
	// person does what a person does in owner/repo before a step
	// (diffStep.Before), as the forge's human user.
	person(t *testing.T, owner, repo, what string)
}

// read reads owner/name's pull requests (every state), branches, and for each
// pull request its commits above main, its timeline and its tree.
func read(f diffForge, owner, name string) (repoShot, error) {
	base := "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(name)
	var shot repoShot
	branches, mainHead, err := f.branches(base)
	if err != nil {
		return shot, err
	}
	for _, b := range branches {
		if b != "main" {
			shot.Branches = append(shot.Branches, b)
		}
	}
	sort.Strings(shot.Branches)
	var prs []struct {
		Number int
		State  string
		Title  string
		Body   string
		Draft  bool
		Merged bool
		Head   struct{ Ref, SHA string }
		Base   struct{ Ref string }
		Labels []struct{ Name string }
	}
	if err := f.get(base+"/pulls?state=all&limit=50&per_page=50", &prs); err != nil {
		return shot, fmt.Errorf("pulls: %w", err)
	}
	for _, p := range prs {
		pr := prShot{Number: p.Number, State: p.State, Branch: p.Head.Ref, Base: p.Base.Ref, Title: p.Title, Body: p.Body,
			Draft: p.Draft, Merged: p.Merged, HeadSHA: p.Head.SHA}
		for _, l := range p.Labels {
			pr.Labels = append(pr.Labels, l.Name)
		}
		sort.Strings(pr.Labels)
		if pr.Commits, err = commitsAbove(f, base, p.Head.SHA, mainHead); err != nil {
			return shot, err
		}
		if pr.Timeline, err = f.timeline(base, p.Number, p.Head.SHA); err != nil {
			return shot, err
		}
		if pr.Tree, err = tree(f, base, p.Head.SHA); err != nil {
			return shot, err
		}
		shot.PRs = append(shot.PRs, pr)
	}
	sort.Slice(shot.PRs, func(i, j int) bool { return shot.PRs[i].Number < shot.PRs[j].Number })
	return shot, nil
}

// commitsAbove walks first parents from head down to stop (main's head).
func commitsAbove(f diffForge, base, head, stop string) ([]commitShot, error) {
	type person struct{ Name, Email string }
	var out []commitShot
	for sha := head; sha != stop; {
		if len(out) > 20 {
			return nil, fmt.Errorf("more than 20 commits above main on %s", head)
		}
		// GitHub's git data API answers the commit itself; Gitea's nests it
		// under "commit".
		var c struct {
			Message           string
			Author, Committer person
			Commit            struct {
				Message           string
				Author, Committer person
			}
			Parents []struct{ SHA string }
		}
		if err := f.get(base+"/git/commits/"+sha+"?stat=false&verification=false&files=false", &c); err != nil {
			return nil, fmt.Errorf("commit %s: %w", sha, err)
		}
		if c.Commit.Message != "" {
			c.Message, c.Author, c.Committer = c.Commit.Message, c.Commit.Author, c.Commit.Committer
		}
		subject, body, _ := strings.Cut(strings.TrimRight(c.Message, "\n"), "\n")
		out = append([]commitShot{{AuthorName: c.Author.Name, AuthorEmail: c.Author.Email,
			CommitterName: c.Committer.Name, CommitterEmail: c.Committer.Email,
			Subject: subject, Body: strings.TrimLeft(body, "\n")}}, out...)
		if len(c.Parents) == 0 {
			return nil, fmt.Errorf("commit %s has no parent and is not main's head %s", sha, stop)
		}
		sha = c.Parents[0].SHA
	}
	return out, nil
}

// tree reads every file at commit sha.
func tree(f diffForge, base, sha string) (map[string]string, error) {
	// The commit's tree (GitHub's flat, Gitea's nested under "commit").
	var c struct {
		Tree   struct{ SHA string }
		Commit struct{ Tree struct{ SHA string } }
	}
	if err := f.get(base+"/git/commits/"+sha+"?stat=false&verification=false&files=false", &c); err != nil {
		return nil, fmt.Errorf("commit %s: %w", sha, err)
	}
	treeSHA := c.Tree.SHA
	if treeSHA == "" {
		treeSHA = c.Commit.Tree.SHA
	}
	if treeSHA == "" {
		return nil, fmt.Errorf("commit %s names no tree", sha)
	}
	var tr struct {
		Tree []struct {
			Path, Type, SHA string
		}
		Truncated bool
	}
	if err := f.get(base+"/git/trees/"+treeSHA+"?recursive=1&per_page=1000", &tr); err != nil {
		return nil, fmt.Errorf("tree %s of %s: %w", treeSHA, sha, err)
	}
	if tr.Truncated {
		return nil, fmt.Errorf("tree %s of %s truncated", treeSHA, sha)
	}
	files := map[string]string{}
	for _, e := range tr.Tree {
		if e.Type != "blob" {
			continue
		}
		var blob struct{ Content string }
		if err := f.get(base+"/git/blobs/"+e.SHA, &blob); err != nil {
			return nil, fmt.Errorf("blob %s (%s): %w", e.SHA, e.Path, err)
		}
		b, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(blob.Content, "\n", ""))
		if err != nil {
			return nil, fmt.Errorf("blob %s (%s): %w", e.SHA, e.Path, err)
		}
		files[e.Path] = string(b)
	}
	return files, nil
}
