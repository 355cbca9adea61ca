package renovate

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// treeForge is a forge of commits whose trees are path → content: what
// ForgeDelivery reads (branches, commits, trees, blobs, the branch's PRs).
type treeForge struct {
	forge.Forge                              // nil: ForgeDelivery calls nothing else
	branches    map[string]string            // branch → commit
	trees       map[string]map[string]string // commit → path → content
	prs         []forge.PR
	blobReads   int
}

// branchOnlyForge hides BranchPRs: a forge without forge.BranchPRLister.
type branchOnlyForge struct{ *treeForge }

func (f *treeForge) DefaultBranch(context.Context) (string, error) { return "main", nil }
func (f *treeForge) BranchHead(_ context.Context, b string) (forge.Commit, bool, error) {
	sha, ok := f.branches[b]
	return forge.Commit{SHA: sha, Tree: sha}, ok, nil
}
func (f *treeForge) Commit(_ context.Context, sha string) (forge.Commit, error) {
	if _, ok := f.trees[sha]; !ok {
		return forge.Commit{}, fmt.Errorf("no commit %s", sha)
	}
	return forge.Commit{SHA: sha, Tree: sha}, nil
}
func (f *treeForge) Files(_ context.Context, tree string) ([]forge.File, error) {
	var out []forge.File
	for p := range f.trees[tree] {
		out = append(out, forge.File{Path: p, SHA: tree + ":" + p})
	}
	return out, nil
}
func (f *treeForge) Blob(_ context.Context, sha string) ([]byte, error) {
	f.blobReads++
	for tree, files := range f.trees {
		for p, c := range files {
			if tree+":"+p == sha {
				return []byte(c), nil
			}
		}
	}
	return nil, fmt.Errorf("no blob %s", sha)
}
func (f *treeForge) BranchPRs(_ context.Context, branch string, max int) ([]forge.PR, error) {
	var out []forge.PR
	for i := len(f.prs) - 1; i >= 0 && len(out) < max; i-- {
		if f.prs[i].Head == branch {
			out = append(out, f.prs[i])
		}
	}
	return out, nil
}
func (f *treeForge) FindPR(_ context.Context, branch string, _ int) (forge.PR, bool, error) {
	for i := len(f.prs) - 1; i >= 0; i-- {
		if f.prs[i].Head == branch && f.prs[i].Open {
			return f.prs[i], true, nil
		}
	}
	return forge.PR{}, false, nil
}

const (
	oldDigest   = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	newDigest   = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	thirdDigest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	nudgeBr     = "konflux/component-updates/bundle-component-update-operand"
)

func deliveryInput() DeliveryInput {
	return DeliveryInput{Branch: nudgeBr, Digest: newDigest, FileMatch: FileMatch(Options{}, ""),
		Repos: []string{"quay.io/org/operand", "registry.example.com/released/operand"}}
}

func dockerfile(digest string) string { return "FROM quay.io/org/operand:v1@" + digest + "\n" }

// The digest is delivered on the base branch, at the head of an open or merged PR
// of the nudge branch, or when nothing references the image; not when the only
// PR holding it was closed unmerged, when an older merged PR of the branch holds
// another digest, or when the digest is only in a file Renovate does not edit.
func TestForgeDelivery(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		f         *treeForge
		delivered bool
		where     string
		pr        int
	}{
		{"on the base branch (automerged, or already current)", &treeForge{branches: map[string]string{"main": "b"},
			trees: map[string]map[string]string{"b": {"Dockerfile": dockerfile(newDigest)}}}, true, renovaterun.DeliveredOnBase, 0},
		{"in the open PR", &treeForge{branches: map[string]string{"main": "b"},
			trees: map[string]map[string]string{"b": {"Dockerfile": dockerfile(oldDigest)}, "h": {"Dockerfile": dockerfile(newDigest)}},
			prs:   []forge.PR{{Number: 3, Head: nudgeBr, HeadSHA: "h", Open: true}}}, true, renovaterun.DeliveredInPullRequest, 3},
		{"in a merged PR, the base moved on since", &treeForge{branches: map[string]string{"main": "b"},
			trees: map[string]map[string]string{"b": {"Dockerfile": dockerfile(thirdDigest)}, "h": {"Dockerfile": dockerfile(newDigest)}},
			prs:   []forge.PR{{Number: 4, Head: nudgeBr, HeadSHA: "h", Merged: true}}}, true, renovaterun.DeliveredInPullRequest, 4},
		{"only in a PR closed unmerged", &treeForge{branches: map[string]string{"main": "b"},
			trees: map[string]map[string]string{"b": {"Dockerfile": dockerfile(oldDigest)}, "h": {"Dockerfile": dockerfile(newDigest)}},
			prs:   []forge.PR{{Number: 5, Head: nudgeBr, HeadSHA: "h"}}}, false, "", 0},
		{"an older merged PR with another digest", &treeForge{branches: map[string]string{"main": "b"},
			trees: map[string]map[string]string{"b": {"Dockerfile": dockerfile(oldDigest)}, "h": {"Dockerfile": dockerfile(oldDigest)}},
			prs:   []forge.PR{{Number: 6, Head: nudgeBr, HeadSHA: "h", Merged: true}}}, false, "", 0},
		{"no PR (creation refused)", &treeForge{branches: map[string]string{"main": "b"},
			trees: map[string]map[string]string{"b": {"Dockerfile": dockerfile(oldDigest)}}}, false, "", 0},
		{"a PR of another branch", &treeForge{branches: map[string]string{"main": "b"},
			trees: map[string]map[string]string{"b": {"Dockerfile": dockerfile(oldDigest)}, "h": {"Dockerfile": dockerfile(newDigest)}},
			prs:   []forge.PR{{Number: 7, Head: "someone/else", HeadSHA: "h", Open: true}}}, false, "", 0},
		{"only outside fileMatch", &treeForge{branches: map[string]string{"main": "b"},
			trees: map[string]map[string]string{"b": {"Dockerfile": dockerfile(oldDigest), "README.md": dockerfile(newDigest)}}}, false, "", 0},
		{"the image is not referenced: nothing to nudge", &treeForge{branches: map[string]string{"main": "b"},
			trees: map[string]map[string]string{"b": {"Dockerfile": "FROM quay.io/other/image@" + oldDigest + "\n"}}}, true, renovaterun.DeliveredNotReferenced, 0},
		{"referenced under the released name", &treeForge{branches: map[string]string{"main": "b"},
			trees: map[string]map[string]string{"b": {"x.yaml": "image: registry.example.com/released/operand@" + oldDigest + "\n"}}}, false, "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := ForgeDelivery(ctx, c.f, deliveryInput())
			require.NoError(t, err)
			require.Equal(t, c.delivered, v.Delivered, v.Message)
			require.Equal(t, c.where, v.Where)
			require.Equal(t, c.pr, v.PR)
			require.Equal(t, "main", v.Base, "the default branch when none is named")
			require.Equal(t, nudgeBr, v.Branch)
			require.NotEmpty(t, v.Message)
		})
	}
}

// A forge without BranchPRLister is asked for the branch's open PR.
func TestForgeDeliveryWithoutAPRList(t *testing.T) {
	f := &treeForge{branches: map[string]string{"main": "b"},
		trees: map[string]map[string]string{"b": {"Dockerfile": dockerfile(oldDigest)}, "h": {"Dockerfile": dockerfile(newDigest)}},
		prs:   []forge.PR{{Number: 3, Head: nudgeBr, HeadSHA: "h", Open: true}}}
	v, err := ForgeDelivery(context.Background(), branchOnlyForge{f}, deliveryInput())
	require.NoError(t, err)
	require.True(t, v.Delivered)
	require.Equal(t, 3, v.PR)
}

// A base branch that does not exist, and a fileMatch that is no regex, are errors,
// not verdicts.
func TestForgeDeliveryErrors(t *testing.T) {
	in := deliveryInput()
	in.Base = "release"
	_, err := ForgeDelivery(context.Background(), &treeForge{branches: map[string]string{"main": "b"}}, in)
	require.ErrorContains(t, err, "release does not exist")
	in = deliveryInput()
	in.FileMatch = []string{"("}
	_, err = ForgeDelivery(context.Background(), &treeForge{}, in)
	require.ErrorContains(t, err, "fileMatch")
}

// The forge decides a run that exited 0: delivered, it succeeded whatever its log
// said; not delivered, it failed with the step's reason or NotDelivered.
func TestWithDelivery(t *testing.T) {
	ok := renovaterun.RunStatus{Done: true, ExitedZero: true, Succeeded: true, Reason: "Succeeded"}
	got := ok.WithDelivery(renovaterun.DeliveryVerdict{Message: "nowhere"})
	require.False(t, got.Succeeded)
	require.Equal(t, renovaterun.ReasonNotDelivered, got.Reason)
	require.Contains(t, got.Message, "nowhere")
	require.True(t, ok.WithDelivery(renovaterun.DeliveryVerdict{Delivered: true}).Succeeded)

	auth := renovaterun.RunStatus{Done: true, ExitedZero: true, Reason: renovaterun.ReasonRegistryAuthFailed, Message: "link a pull secret"}
	got = auth.WithDelivery(renovaterun.DeliveryVerdict{Message: "nowhere"})
	require.False(t, got.Succeeded)
	require.Equal(t, renovaterun.ReasonRegistryAuthFailed, got.Reason, "the step's reason says what to fix")
	require.Equal(t, "link a pull secret; nowhere", got.Message)
	require.True(t, auth.WithDelivery(renovaterun.DeliveryVerdict{Delivered: true}).Succeeded, "the forge overrides the log")
}

// The branch's name is BranchKey's last part.
func TestBranchNameIsBranchKeys(t *testing.T) {
	for _, simple := range []bool{false, true} {
		key := renovaterun.BranchKey("h", "o/r", "main", "operand", "bundle", simple)
		require.Equal(t, "h/o/r@main:"+branchName("operand", "bundle", simple), key)
	}
}

func (u *unitWorld) checkDelivery(req renovateapi.DeliveryRequest) (renovaterun.DeliveryVerdict, error) {
	u.t.Helper()
	v, err := u.env.ExecuteActivity(u.a.CheckDelivery, req)
	if err != nil {
		return renovaterun.DeliveryVerdict{}, err
	}
	var out renovaterun.DeliveryVerdict
	require.NoError(u.t, v.Get(&out))
	return out, nil
}

func deliveryRequest(nudged string, logOK bool) renovateapi.DeliveryRequest {
	r := unitRequest("run")
	return renovateapi.DeliveryRequest{Namespace: r.Namespace, Nudging: r.Nudging, Nudged: nudged, ImageURL: r.ImageURL, Digest: r.Digest,
		PipelineRun: "run", LogSaysOK: logOK}
}

// On a host where no forge listens (a test world's stand-in runs), the run's log
// decides; nothing is read or minted.
func TestCheckDeliveryOnAStandInHost(t *testing.T) {
	u := newUnitWorld(t, "")
	u.a.StandInForge = func(host string) bool { return host == "github.example.com" }
	v, err := u.checkDelivery(deliveryRequest("bundle", true))
	require.NoError(t, err)
	require.True(t, v.Delivered)
	require.Equal(t, renovaterun.DeliveredByRunLog, v.Where)
	v, err = u.checkDelivery(deliveryRequest("bundle", false))
	require.NoError(t, err)
	require.False(t, v.Delivered)
}

// The forge is asked with the run's credential only for a repository the
// namespace owns, as at launch: a Component naming a repository the namespace does not own
// is refused before any Secret is read.
func TestCheckDeliveryRefusesAnUnownedRepository(t *testing.T) {
	u := newUnitWorld(t, "")
	require.NoError(t, u.kube.Create(context.Background(), &mirrorv1alpha1.Component{
		ObjectMeta: metav1.ObjectMeta{Name: "stranger", Namespace: "tenant"},
		Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "stranger", Source: mirrorv1alpha1.ComponentSource{
			GitSource: &mirrorv1alpha1.GitSource{URL: "https://github.example.com/victim/repo", Revision: "main"}}}}))
	_, err := u.checkDelivery(deliveryRequest("stranger", true))
	require.Error(t, err)
	require.True(t, ownership.IsRefusal(err), "%v", err)
}
