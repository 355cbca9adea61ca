package changegroup_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/test/ociregistry"
	"github.com/nudgeflow/nudgeflow/test/plrunner"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// A ChangeGroup cancelled while it holds a build hands the build back to normal
// nudging, and that nudge lands for real on each forge: the runner runs the
// hand-back's Renovate PipelineRun with the pinned Renovate against the forge
// (the GitHub and GitLab emulators with real git, the real Gitea) and a TLS
// registry the build pushed to, and the nudge PR carries the build's digest in
// the CSV. The group's own draft PR is closed; the member that never built is not
// nudged. The forges run in parallel, each in its own namespace.
func TestCancelledGroupsBuildLandsAsANudgePR(t *testing.T) {
	renovateBin := os.Getenv("RENOVATE")
	require.NotEmpty(t, renovateBin, "set RENOVATE=$(hack/tools.sh path renovate)")
	for _, f := range shared.forges {
		t.Run(f.Name(), func(t *testing.T) {
			t.Parallel()
			cancelledGroupsBuildLands(t, f, renovateBin)
		})
	}
}

func cancelledGroupsBuildLands(t *testing.T, fg forgeHarness, renovateBin string) {
	w := world.Get(t)
	ctx := context.Background()
	s := &scenario{t: t, w: w, ns: w.Namespace(t), f: fg, components: []string{"operand-a", "operand-b"}}

	reg, ca, err := ociregistry.StartWithNewCA("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, reg.Close()) })
	imageOf := func(c string) string { return reg.Host + "/" + s.ns + "/" + c }
	original := map[string]string{}
	for _, c := range s.components {
		original[c], err = reg.PushImage(ctx, s.ns+"/"+c+":v0")
		require.NoError(t, err)
	}

	// The namespace as newScenarioOn makes it, with the images in the registry.
	require.NoError(t, w.Kube.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "forge", Namespace: s.ns, Labels: map[string]string{
			forge.LabelCredentials: "scm", forge.LabelSCMHost: "127.0.0.1"}},
		Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{"username": []byte("nudgeflow"), "password": []byte(fg.Token())},
	}))
	var csv strings.Builder
	csv.WriteString("kind: ClusterServiceVersion\nspec:\n  relatedImages:\n")
	for _, c := range s.components {
		fmt.Fprintf(&csv, "  - name: %s\n    image: %s@%s\n", c, imageOf(c), original[c])
	}
	fg.CreateRepo(s.ns, "bundle", "main", map[string]string{"bundle/manifests/operator.clusterserviceversion.yaml": csv.String()})
	// Renovate applies only labels the repository has (a Konflux tenant creates them).
	fg.CreateLabel(s.ns, "bundle", renovate.NudgeLabel)
	// 127.0.0.1 names no forge: the git-provider annotation does, as a tenant on a
	// self-hosted forge sets it. The group's PR would fall back to GitHub without
	// it, but Renovate's platform is only ever derived from the annotation or the
	// host (build-service's rule).
	require.NoError(t, w.Kube.Create(ctx, &mirrorv1alpha1.Component{
		ObjectMeta: metav1.ObjectMeta{Name: "bundle", Namespace: s.ns, Annotations: map[string]string{mirrorv1alpha1.AnnotationGitProvider: fg.Name()}},
		Spec: mirrorv1alpha1.ComponentSpec{ContainerImage: imageOf("bundle"),
			Source: mirrorv1alpha1.ComponentSource{GitSource: &mirrorv1alpha1.GitSource{URL: fg.RepoURL(s.ns, "bundle"), Revision: "main"}}},
	}))
	for _, c := range s.components {
		comp := &mirrorv1alpha1.Component{
			ObjectMeta: metav1.ObjectMeta{Name: c, Namespace: s.ns},
			Spec: mirrorv1alpha1.ComponentSpec{ContainerImage: imageOf(c), BuildNudgesRef: []string{"bundle"},
				Source: mirrorv1alpha1.ComponentSource{GitSource: &mirrorv1alpha1.GitSource{URL: "https://github.com/org/" + c}}},
		}
		require.NoError(t, w.Kube.Create(ctx, comp))
		require.NoError(t, world.SetStatus(ctx, w.Kube, comp, func() { comp.Status.LastPromotedImage = imageOf(c) + "@" + original[c] }))
	}

	// The runner stands in for Tekton in this namespace. Its Renovate trusts the
	// registry through Node's extra CA (the mintmaker image trusts quay.io through
	// its system store; this world's worker has no trusted-CA ConfigMap to mount).
	caFile := filepath.Join(t.TempDir(), "registry-ca.pem")
	require.NoError(t, os.WriteFile(caFile, ca.PEM, 0o600))
	watcher, err := ctrlclient.NewWithWatch(w.Config(), ctrlclient.Options{Scheme: kube.NewScheme()})
	require.NoError(t, err)
	runner := &plrunner.Runner{Client: watcher, StateDir: t.TempDir(), ToolPath: filepath.Dir(renovateBin), Namespace: s.ns,
		Env: append(os.Environ(), "NODE_EXTRA_CA_CERTS="+caFile)}
	stop := runner.Start(ctx)
	t.Cleanup(func() { require.NoError(t, stop()) })

	s.createGroup("g", s.components, 0)
	s.explainOnFailure("g")
	imageURL := imageOf("operand-a") + ":on-push-1"
	digest, err := reg.PushImage(ctx, strings.TrimPrefix(imageURL, reg.Host+"/"))
	require.NoError(t, err)
	s.builds++
	build := &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{Name: "operand-a-on-push-1", Namespace: s.ns,
			Labels:      map[string]string{konflux.LabelComponent: "operand-a", konflux.LabelPipelineType: "build"},
			Annotations: map[string]string{konflux.AnnotationEventType: "push"}},
		Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"}},
	}
	require.NoError(t, w.Kube.Create(ctx, build))
	require.NoError(t, world.SetStatus(ctx, w.Kube, build, func() {
		konflux.SucceededBuild{ImageURL: imageURL, Digest: digest, Started: time.Now().Add(-time.Minute), Completed: time.Now()}.WriteStatus(build)
	}))
	// build-service's nudge of that build, which the bridge delivers to the group.
	require.NoError(t, w.Kube.Create(ctx, &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "renovate-pipeline-", Namespace: s.ns,
			Labels: map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue},
			Annotations: map[string]string{konflux.AnnotationNudging: "operand-a", konflux.AnnotationNudged: "bundle",
				konflux.AnnotationNudgingPLR: build.Name, konflux.AnnotationNudgingImg: imageURL}},
		Spec: tektonv1.PipelineRunSpec{PipelineSpec: &tektonv1.PipelineSpec{Tasks: []tektonv1.PipelineTask{{Name: "renovate"}}}},
	}))
	s.waitFor("g", "the group holds the build", time.Minute, func(cg *appstudiov1alpha1.ChangeGroup) bool { return cg.Status.Ready == "1/2" })
	draft := s.draftPR()

	s.annotate("g", "cancel=the release moved")
	s.waitPhase("g", appstudiov1alpha1.PhaseCancelled)
	var nudgePR harnessPR
	world.Eventually(t, 5*time.Minute, "the handed-back build's nudge PR appears", func() (bool, error) {
		for _, p := range fg.PRs(s.ns, "bundle") {
			if strings.HasPrefix(p.Head, "konflux/component-updates/") {
				nudgePR = p
				return true, nil
			}
		}
		for _, r := range s.renovateRuns() {
			if c := r.Status.GetCondition("Succeeded"); c != nil && c.IsFalse() && r.Annotations[konflux.AnnotationHeldBy] == "" {
				t.Fatalf("the hand-back's Renovate run %s failed: %s\n%s", r.Name, c.Message, runner.ReadLog(s.ns, r.Name))
			}
		}
		return false, fmt.Errorf("no Renovate PR yet; runs %s", runStates(s.renovateRuns()))
	})
	got, ok := fg.FileAt(s.ns, "bundle", nudgePR.Head, "bundle/manifests/operator.clusterserviceversion.yaml")
	require.True(t, ok)
	require.Contains(t, got, imageOf("operand-a")+"@"+digest, "the held build's digest landed")
	require.Contains(t, got, imageOf("operand-b")+"@"+original["operand-b"], "the member that never built is untouched")
	closed, _ := fg.PR(s.ns, "bundle", draft.Number)
	require.Equal(t, "closed", closed.State, "the cancelled group closed its own PR")
	t.Logf("renovate-e2e forge=%s case=changegroup-handback files_bumped=1 prs=1", fg.Name())
}

// runStates says, per Renovate run, whether it is held, released or ended.
func runStates(runs []tektonv1.PipelineRun) string {
	var out []string
	for _, r := range runs {
		state := string(r.Spec.Status)
		if c := r.Status.GetCondition("Succeeded"); c != nil {
			state += " " + string(c.Status) + " " + c.Message
		}
		out = append(out, r.Name+": "+strings.TrimSpace(state))
	}
	return strings.Join(out, "; ")
}
