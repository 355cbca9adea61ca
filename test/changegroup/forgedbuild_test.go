package changegroup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/test/forgedbuild"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// TestForgedBuildSignalIsRefused is the forged-build attack on Temporal, as an attacker
// runs it: with the Temporal CLI, whoever reaches the frontend signals a running
// ChangeGroup `component-built` with digests the cluster never built for it (one
// nobody built, one naming a real build run, another tenant's real build). The
// worker verifies each when it enters the group: none lands in the group's pull
// request, each leaves a BuildNotVerified Warning Event on the group, and the
// verdicts are in the workflow's state. The group's real builds are delivered,
// the first one even after its build PipelineRun is pruned (it is verified once).
func TestForgedBuildSignalIsRefused(t *testing.T) {
	ctx := context.Background()
	s := newScenario(t, "operand-a", "operand-b")
	s.createGroup("g", []string{"operand-a", "operand-b"}, time.Hour)
	s.explainOnFailure("g")
	// Another tenant's namespace builds operand-b too: a real digest, not this one's.
	other := newScenario(t, "operand-b")
	otherDigest := digestOf("operand-b", 99)
	otherRun := other.buildRun("operand-b", otherDigest, time.Now())

	realA := digestOf("operand-a", 1)
	s.build("operand-a", realA, time.Now())
	cg := s.waitFor("g", "operand-a's build collected", time.Minute, func(cg *appstudiov1alpha1.ChangeGroup) bool { return cg.Status.Ready == "1/2" })
	s.draftPR()
	runA := s.buildRunOf("operand-a", realA)

	later := time.Now().Add(time.Hour) // newer than anything: each would win
	nobody, nobodyRun := forgedbuild.Digest(), forgedbuild.Digest()
	attacks := []struct {
		name string
		b    changegroupapi.ComponentBuilt
	}{
		{"a digest nobody built", changegroupapi.ComponentBuilt{Component: "operand-b", Build: imagebuild.Build{Digest: nobody, PullSpec: imageOf("operand-b") + "@" + nobody, BuiltAt: later}}},
		{"a digest nobody built, naming a real build run", changegroupapi.ComponentBuilt{Component: "operand-a", Build: imagebuild.Build{Digest: nobodyRun, PullSpec: imageOf("operand-a") + "@" + nobodyRun, BuildPipelineRun: runA.Name, BuildUID: string(runA.UID), BuiltAt: later}}},
		{"another tenant's build, naming its namespace", changegroupapi.ComponentBuilt{Component: "operand-b", Namespace: other.ns, Build: imagebuild.Build{Digest: otherDigest, PullSpec: imageOf("operand-b") + "@" + otherDigest, BuildPipelineRun: otherRun.Name, BuildUID: string(otherRun.UID), BuiltAt: later}}},
	}
	temporal := forgedbuild.Temporal{Address: s.w.Temporal.Address, Namespace: s.w.Temporal.Namespace}
	id := changegroupapi.WorkflowID(cg.Namespace, cg.Name, string(cg.UID))
	for _, a := range attacks {
		_, err := forgedbuild.Signal(ctx, temporal, id, changegroupapi.SignalComponentBuilt, a.b)
		require.NoError(t, err, "%s: Temporal takes the signal (the frontend let the attacker in)", a.name)
	}
	// The third again, without the namespace: it is still not this namespace's build.
	stripped := attacks[2].b
	stripped.Namespace, stripped.Digest = "", digestOf("operand-b", 98)
	stripped.PullSpec = imageOf("operand-b") + "@" + stripped.Digest
	otherRun2 := other.buildRun("operand-b", stripped.Digest, time.Now())
	stripped.BuildPipelineRun, stripped.BuildUID = otherRun2.Name, string(otherRun2.UID)
	_, err := forgedbuild.Signal(ctx, temporal, id, changegroupapi.SignalComponentBuilt, stripped)
	require.NoError(t, err)
	attacks = append(attacks, struct {
		name string
		b    changegroupapi.ComponentBuilt
	}{"another tenant's build, namespace left out", stripped})

	for _, a := range attacks {
		world.Eventually(t, time.Minute, "a BuildNotVerified Event for "+a.name, func() (bool, error) {
			evs, err := forgedbuild.RefusalEvents(ctx, s.w.Kube, s.ns, a.b.Digest)
			if err != nil || len(evs) == 0 {
				return false, err
			}
			e := evs[0]
			require.Equal(t, "ChangeGroup", e.InvolvedObject.Kind, a.name)
			require.Equal(t, "g", e.InvolvedObject.Name, a.name)
			require.Equal(t, cg.UID, e.InvolvedObject.UID, a.name)
			t.Logf("%s: %s", a.name, e.Message)
			return true, nil
		})
	}

	// The build run of operand-a's real build is pruned: the group keeps the build.
	require.NoError(t, ctrlclient.IgnoreNotFound(s.w.Kube.Delete(ctx, runA)))
	world.Eventually(t, time.Minute, "operand-a's build run is gone", func() (bool, error) {
		err := s.w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(runA), &tektonv1.PipelineRun{})
		return apierrors.IsNotFound(err), ctrlclient.IgnoreNotFound(err)
	})
	realB := digestOf("operand-b", 1)
	s.build("operand-b", realB, time.Now())
	cg = s.waitPhase("g", appstudiov1alpha1.PhaseReady)
	require.Equal(t, "2/2", cg.Status.Ready)
	pr := s.f.PRs(s.ns, "bundle")[0]
	require.Equal(t, map[string]string{"operand-a": realA, "operand-b": realB}, s.csvDigests(pr.HeadSHA),
		"the released PR holds the real builds, operand-a's although its run is gone")

	landed := 0
	for _, a := range attacks {
		if at := s.commitWith(pr.Head, a.b.Digest); at != "" {
			landed++
			t.Errorf("%s: digest %s is in commit %s of the PR", a.name, a.b.Digest, at)
		}
		if strings.Contains(pr.Body, a.b.Digest) {
			landed++
			t.Errorf("%s: digest %s is in the PR's description", a.name, a.b.Digest)
		}
	}
	st := s.query(cg)
	for _, a := range attacks {
		v, ok := st.Verdicts[a.b.Component+"@"+a.b.Digest]
		require.True(t, ok, "%s: a verdict is recorded", a.name)
		require.False(t, v.Verified, "%s: verified by %s %s", a.name, v.Source, v.Evidence)
	}
	require.Equal(t, buildcheck.SourceBuildRun, st.Verdicts["operand-a@"+realA].Source)
	require.Equal(t, buildcheck.SourceBuildRun, st.Verdicts["operand-b@"+realB].Source)
	require.Contains(t, readyMessage(cg), fmt.Sprintf("%d build(s) refused", len(attacks)))
	fmt.Printf("forged-build attacks=%d refused=%d landed=%d\n", len(attacks), len(attacks)-landed, landed)

	require.NoError(t, s.f.Merge(s.ns, "bundle", pr.Number))
	s.waitPhase("g", appstudiov1alpha1.PhaseCompleted)
	require.Empty(t, s.handBackEvents("g"), "a refused build is not handed back either")
}

// buildRunOf is the build PipelineRun of component that reported digest.
func (s *scenario) buildRunOf(component, digest string) *tektonv1.PipelineRun {
	s.t.Helper()
	var list tektonv1.PipelineRunList
	require.NoError(s.t, s.w.Kube.List(context.Background(), &list, ctrlclient.InNamespace(s.ns)))
	for i := range list.Items {
		plr := &list.Items[i]
		for _, r := range plr.Status.Results {
			if r.Name == "IMAGE_DIGEST" && r.Value.StringVal == digest && strings.HasPrefix(plr.Name, component+"-on-push-") {
				return plr
			}
		}
	}
	s.t.Fatalf("no build run of %s reported %s", component, digest)
	return nil
}

// commitWith walks the PR branch's commits down to the base branch and returns the
// first whose CSV references digest ("" when none does).
func (s *scenario) commitWith(branch, digest string) string {
	s.t.Helper()
	head, ok := shared.emu.Head(s.ns, "bundle", branch)
	require.True(s.t, ok, "branch %s", branch)
	base, ok := shared.emu.Head(s.ns, "bundle", "main")
	require.True(s.t, ok)
	seen := map[string]bool{}
	for todo := []string{head.SHA}; len(todo) > 0; {
		sha := todo[0]
		todo = todo[1:]
		if seen[sha] || shared.emu.IsAncestor(s.ns, "bundle", sha, base.SHA) {
			continue
		}
		seen[sha] = true
		for _, d := range s.csvDigestsAt(sha) {
			if d == digest {
				return sha
			}
		}
		c, ok := shared.emu.CommitOf(s.ns, "bundle", sha)
		require.True(s.t, ok, "commit %s", sha)
		todo = append(todo, c.Parents...)
	}
	require.NotEmpty(s.t, seen, "the walk read the PR's commits")
	return ""
}

// readyMessage is the group's AllComponentsReady condition message.
func readyMessage(cg *appstudiov1alpha1.ChangeGroup) string {
	for _, c := range cg.Status.Conditions {
		if c.Type == appstudiov1alpha1.ConditionAllComponentsReady {
			return c.Message
		}
	}
	return ""
}
