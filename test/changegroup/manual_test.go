package changegroup_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/api/enums/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/cmd/nudgeflow/cli"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/world"
)

var three = []string{"operand-a", "operand-b", "operator"}

// draftPR waits for the group's draft PR and returns it.
func (s *scenario) draftPR() harnessPR {
	s.t.Helper()
	var pr harnessPR
	world.Eventually(s.t, 30*time.Second, "a draft PR", func() (bool, error) {
		prs := s.f.PRs(s.ns, "bundle")
		if len(prs) == 1 && prs[0].Draft {
			pr = prs[0]
			return true, nil
		}
		return false, fmt.Errorf("%d PRs", len(prs))
	})
	return pr
}

func (s *scenario) buildNow(component string, n int) {
	s.t.Helper()
	nudge := s.build(component, digestOf(component, n), time.Now())
	require.Equal(s.t, tektonv1.PipelineRunSpecStatus(tektonv1.PipelineRunSpecStatusCancelled), nudge.Spec.Status,
		"the nudge of %s's build %d was not intercepted (annotations %v)", component, n, nudge.Annotations)
}

func (s *scenario) annotate(name, action string) {
	s.t.Helper()
	cg := s.group(name)
	patch := ctrlclient.MergeFrom(cg.DeepCopy())
	if cg.Annotations == nil {
		cg.Annotations = map[string]string{}
	}
	cg.Annotations[konflux.AnnotationAction] = action
	require.NoError(s.t, s.w.Kube.Patch(context.Background(), cg, patch))
}

func TestPRClosedByPersonCancels(t *testing.T) {
	eachForge(t, func(t *testing.T, f forgeHarness) {
		s := newScenarioOn(t, f, three...)
		s.createGroup("g", three, 0)
		s.buildNow("operand-a", 1)
		pr := s.draftPR()
		require.NoError(t, s.f.Close(s.ns, "bundle", pr.Number))
		cg := s.waitPhase("g", appstudiov1alpha1.PhaseCancelled)
		require.Contains(t, cg.Status.Conditions[0].Message, "closed without merging")
		require.Zero(t, s.f.CIBuilds(s.ns, "bundle"))
		s.record("g")
	})
}

func TestMergedBeforeAllReadyCompletes(t *testing.T) {
	eachForge(t, func(t *testing.T, f forgeHarness) {
		s := newScenarioOn(t, f, three...)
		s.createGroup("g", three, 0)
		s.buildNow("operator", 1)
		pr := s.draftPR()
		require.NoError(t, s.f.Merge(s.ns, "bundle", pr.Number))
		cg := s.waitPhase("g", appstudiov1alpha1.PhaseCompleted)
		require.Equal(t, "1/3", cg.Status.Ready)
		s.record("g")
	})
}

func TestReleaseNowWithTwoOfThreeByAnnotation(t *testing.T) {
	s := newScenario(t, three...)
	s.createGroup("g", three, 0)
	s.buildNow("operand-a", 1)
	s.buildNow("operand-b", 1)
	s.waitFor("g", "two ready", 30*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool { return cg.Status.Ready == "2/3" })
	s.annotate("g", "release-now")
	cg := s.waitPhase("g", appstudiov1alpha1.PhaseReady)
	require.NotContains(t, cg.Annotations, konflux.AnnotationAction, "the override is consumed")
	pr, _ := s.f.PR(s.ns, "bundle", s.draftlessPR().Number)
	require.False(t, pr.Draft)
	digests := s.csvDigests(pr.Head)
	require.Equal(t, digestOf("operand-a", 1), digests["operand-a"])
	require.Equal(t, digestOf("operand-b", 1), digests["operand-b"])
	require.Equal(t, digestOf("operator", 0), digests["operator"], "the waiting component keeps its current digest")
	require.Equal(t, 1, s.f.CIBuilds(s.ns, "bundle"))
	require.Equal(t, "ReleasedEarly", cg.Status.Conditions[0].Reason)
	s.mergeAndRecord("g")
}

// mergeAndRecord merges the group's PR, waits for Completed and records the history.
func (s *scenario) mergeAndRecord(name string) {
	s.t.Helper()
	require.NoError(s.t, s.f.Merge(s.ns, "bundle", s.draftlessPR().Number))
	s.waitPhase(name, appstudiov1alpha1.PhaseCompleted)
	s.record(name)
}

// draftlessPR returns the group's only PR, whatever its draft state.
func (s *scenario) draftlessPR() harnessPR {
	prs := s.f.PRs(s.ns, "bundle")
	require.Len(s.t, prs, 1)
	return prs[0]
}

func TestComponentDroppedFromSpecReleasesWhenRestReady(t *testing.T) {
	s := newScenario(t, three...)
	s.createGroup("g", three, 0)
	s.buildNow("operand-a", 1)
	s.buildNow("operator", 1)
	s.waitFor("g", "two ready", 30*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool { return cg.Status.Ready == "2/3" })
	cg := s.group("g")
	patch := ctrlclient.MergeFrom(cg.DeepCopy())
	cg.Spec.NudgingComponents = []appstudiov1alpha1.NudgingComponentRef{{Name: "operand-a"}, {Name: "operator"}}
	require.NoError(t, s.w.Kube.Patch(context.Background(), cg, patch))
	cg = s.waitPhase("g", appstudiov1alpha1.PhaseReady)
	require.Equal(t, "2/2", cg.Status.Ready)
	require.Equal(t, 1, s.f.CIBuilds(s.ns, "bundle"))
	for _, c := range cg.Status.Components {
		if c.Name == "operand-b" {
			require.Equal(t, appstudiov1alpha1.ComponentDropped, c.State)
		}
	}
	s.mergeAndRecord("g")
}

func TestHumanCommitPausesPushesUntilRebase(t *testing.T) {
	eachForge(t, func(t *testing.T, f forgeHarness) {
		s := newScenarioOn(t, f, three...)
		cg := s.createGroup("g", three, 0)
		s.explainOnFailure("g")
		s.buildNow("operand-a", 1)
		pr := s.draftPR()
		alice := person{Login: "alice", Name: "Alice", Email: "alice@example.com"}
		_, err := s.f.HumanCommit(s.ns, "bundle", pr.Head, alice, map[string]string{"README.md": "alice was here\n"}, "docs: note")
		require.NoError(t, err)
		// Alice's push has no skip marker: Pipelines as Code builds it, as it would.
		ciAfterAlice := s.f.CIBuilds(s.ns, "bundle")
		s.buildNow("operand-b", 1)
		world.Eventually(t, 30*time.Second, "the workflow notices the human commit", func() (bool, error) {
			st, err := s.tryQuery(cg)
			return err == nil && st.HumanEdits, err
		})
		head, _ := s.f.Head(s.ns, "bundle", pr.Head)
		require.Equal(t, "alice@example.com", head.AuthorEmail, "nudgeflow did not push over Alice's commit")
		world.Eventually(t, 30*time.Second, "one comment explains how to resume", func() (bool, error) {
			return len(s.f.Comments(s.ns, "bundle", pr.Number)) == 1, nil
		})

		// A later build is collected but not pushed; still one comment.
		s.buildNow("operand-b", 2)
		world.Eventually(t, 30*time.Second, "operand-b's rebuild collected", func() (bool, error) {
			st, err := s.tryQuery(cg)
			if err != nil {
				return false, err
			}
			for _, x := range st.Components {
				if x.Name == "operand-b" {
					return x.New == digestOf("operand-b", 2), nil
				}
			}
			return false, nil
		})
		require.Len(t, s.f.Comments(s.ns, "bundle", pr.Number), 1)

		// Ticking the rebase checkbox resumes and discards Alice's commit.
		current, _ := s.f.PR(s.ns, "bundle", pr.Number)
		ticked := strings.Replace(current.Body, "- [ ] rebase", "- [x] rebase", 1)
		require.NotEqual(t, current.Body, ticked, "the PR has a rebase checkbox")
		require.NoError(t, s.f.EditBody(s.ns, "bundle", pr.Number, ticked))
		world.Eventually(t, 30*time.Second, "nudgeflow pushes again after the rebase", func() (bool, error) {
			head, _ := s.f.Head(s.ns, "bundle", pr.Head)
			return head.AuthorEmail == bot.Email && s.csvDigests(pr.Head)["operand-b"] == digestOf("operand-b", 2), nil
		})
		readme, _ := s.f.FileAt(s.ns, "bundle", pr.Head, "README.md")
		require.NotContains(t, readme, "alice", "the rebase discards manual changes")
		// The push lands before the sync activity returns (it still rewrites the
		// description): the workflow clears the flag when the activity's result comes.
		world.Eventually(t, 30*time.Second, "the workflow resumes automated pushes", func() (bool, error) {
			st, err := s.tryQuery(cg)
			return err == nil && !st.HumanEdits, err
		})
		require.Len(t, s.f.Comments(s.ns, "bundle", pr.Number), 1)
		require.Equal(t, ciAfterAlice, s.f.CIBuilds(s.ns, "bundle"), "nudgeflow's own pushes stay held")
		s.mergeAndRecord("g")
	})
}

func TestTimeoutCancelsAndClosesThePR(t *testing.T) {
	s := newScenario(t, three...)
	s.createGroup("g", three, 8*time.Second)
	s.buildNow("operand-a", 1)
	pr := s.draftPR()
	cg := s.waitPhase("g", appstudiov1alpha1.PhaseCancelled)
	require.Contains(t, cg.Status.Conditions[0].Message, "not all components were ready within the timeout")
	closed, _ := s.f.PR(s.ns, "bundle", pr.Number)
	require.Equal(t, "closed", closed.State)
	comments := s.f.Comments(s.ns, "bundle", pr.Number)
	require.NotEmpty(t, comments)
	require.Contains(t, comments[len(comments)-1], "was cancelled")
	s.record("g")
}

func TestRateLimitedForgeWaitsAndConverges(t *testing.T) {
	eachForge(t, func(t *testing.T, f forgeHarness) {
		s := newScenarioOn(t, f, "operand-a", "operand-b")
		s.createGroup("g", []string{"operand-a", "operand-b"}, 0)
		// Scoped to this test's repositories: other tests' workflows keep polling.
		s.f.FailNextFor(s.ns, 2, 429, 1)
		s.buildNow("operand-a", 1)
		s.buildNow("operand-b", 1)
		cg := s.waitPhase("g", appstudiov1alpha1.PhaseReady)
		require.Equal(t, "2/2", cg.Status.Ready)
		pr := s.draftlessPR()
		require.Equal(t, map[string]string{"operand-a": digestOf("operand-a", 1), "operand-b": digestOf("operand-b", 1)}, s.csvDigests(pr.Head))
		require.Equal(t, 1, s.f.CIBuilds(s.ns, "bundle"))
		s.mergeAndRecord("g")
	})
}

func TestInterceptionOnlyTouchesHeldNudges(t *testing.T) {
	s := newScenario(t, "operand-a", "operand-b")
	s.createGroup("g", []string{"operand-a"}, 0)
	free := s.nudge("operand-b", []string{"bundle"}, "operand-b-on-push-x")
	require.Empty(t, free.Spec.Status, "a nudge no group holds proceeds")
	require.NotContains(t, free.Annotations, konflux.AnnotationHeldBy)
	// build-service's nudge of two targets, of which only bundle is held. The push
	// build itself does not nudge (no build-nudges-ref to "other"): only the
	// intercepted run carried that nudge, so nudgeflow must deliver it.
	build := s.buildRun("operand-a", digestOf("operand-a", 1), time.Now())
	partial := s.nudge("operand-a", []string{"bundle", "other"}, build.Name)
	require.Equal(t, tektonv1.PipelineRunSpecStatus(tektonv1.PipelineRunSpecStatusCancelled), partial.Spec.Status)
	require.Equal(t, "bundle=g", partial.Annotations[konflux.AnnotationHeldBy])
	require.Equal(t, "other", partial.Annotations[konflux.AnnotationRenudge], "the target nobody holds is recorded to be nudged by nudgeflow")
	require.Equal(t, "cancelled by ChangeGroup g", partial.Annotations[konflux.AnnotationCancelReason])
	id := nudgeapi.WorkflowID(s.ns, string(build.UID), "other")
	world.Eventually(t, 30*time.Second, "a nudge of the target no group holds", func() (bool, error) {
		_, err := s.w.TemporalClient.DescribeWorkflowExecution(context.Background(), id, "")
		return err == nil, nil
	})
	world.Eventually(t, 30*time.Second, "the held target reaches the group", func() (bool, error) {
		return s.group("g").Status.Ready == "1/1", nil
	})
}

func TestOverlappingActiveGroupRejected(t *testing.T) {
	s := newScenario(t, three...)
	s.createGroup("first", []string{"operand-a", "operand-b"}, 0)
	second := &appstudiov1alpha1.ChangeGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "second", Namespace: s.ns},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle",
			NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "operand-b"}, {Name: "operator"}}},
	}
	err := s.w.Kube.Create(context.Background(), second)
	require.Error(t, err)
	require.Contains(t, err.Error(), `ChangeGroup "first" is already active for bundle and collects operand-b`)
	second.Spec.NudgingComponents = []appstudiov1alpha1.NudgingComponentRef{{Name: "operator"}}
	require.NoError(t, s.w.Kube.Create(context.Background(), second), "a disjoint group is fine")
}

func TestDeletingTheGroupCancelsItsWorkflow(t *testing.T) {
	s := newScenario(t, three...)
	s.createGroup("g", three, 0)
	s.buildNow("operand-a", 1)
	pr := s.draftPR()
	cg := s.group("g")
	require.Contains(t, cg.Finalizers, konflux.FinalizerChangeGroup)
	require.NoError(t, s.w.Kube.Delete(context.Background(), cg))
	world.Eventually(t, 30*time.Second, "the CR is gone", func() (bool, error) {
		err := s.w.Kube.Get(context.Background(), types.NamespacedName{Namespace: s.ns, Name: "g"}, &appstudiov1alpha1.ChangeGroup{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	id := changegroupapi.WorkflowID(s.ns, "g", string(cg.UID))
	world.Eventually(t, 30*time.Second, "the workflow ended", func() (bool, error) {
		d, err := s.w.TemporalClient.DescribeWorkflowExecution(context.Background(), id, "")
		if err != nil {
			return false, err
		}
		return d.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, nil
	})
	closed, _ := s.f.PR(s.ns, "bundle", pr.Number)
	require.Equal(t, "closed", closed.State, "a cancelled group closes its PR")
}

func TestReleaseNowCheckboxOnThePR(t *testing.T) {
	eachForge(t, func(t *testing.T, f forgeHarness) {
		s := newScenarioOn(t, f, three...)
		s.createGroup("g", three, 0)
		s.buildNow("operator", 1)
		pr := s.draftPR()
		current, _ := s.f.PR(s.ns, "bundle", pr.Number)
		ticked := strings.Replace(current.Body, "- [ ] release now", "- [x] release now", 1)
		require.NotEqual(t, current.Body, ticked, "the PR has a release-now checkbox")
		require.NoError(t, s.f.EditBody(s.ns, "bundle", pr.Number, ticked))
		cg := s.waitPhase("g", appstudiov1alpha1.PhaseReady)
		require.Equal(t, "1/3", cg.Status.Ready)
		released, _ := s.f.PR(s.ns, "bundle", pr.Number)
		require.False(t, released.Draft)
		require.Equal(t, 1, s.f.CIBuilds(s.ns, "bundle"))
	})
}

// TestOverridesFromTheCLI drives `nudgeflow changegroup` as a person would: a
// refused override explains why; drop then release-now act on the workflow.
func TestOverridesFromTheCLI(t *testing.T) {
	s := newScenario(t, three...)
	s.createGroup("g", three, 0)
	kubeconfig := s.w.Kubeconfig(t)
	t.Setenv("TEMPORAL_ADDRESS", s.w.Temporal.Address)
	t.Setenv("TEMPORAL_NAMESPACE", s.w.Temporal.Namespace)
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		root := cli.NewRoot()
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(append(args, "--kubeconfig", kubeconfig, "-n", s.ns))
		err := root.ExecuteContext(context.Background())
		return out.String(), err
	}
	s.waitFor("g", "the workflow started", 30*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool { return cg.Status.Phase != "" })

	_, err := run("changegroup", "release-now", "g")
	require.ErrorContains(t, err, "nothing to release: no component is ready yet")
	_, err = run("changegroup", "drop", "g", "nope")
	require.ErrorContains(t, err, `component "nope" is not a member of this group`)

	s.buildNow("operand-a", 1)
	s.buildNow("operand-b", 1)
	s.waitFor("g", "two ready", 30*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool { return cg.Status.Ready == "2/3" })
	out, err := run("changegroup", "drop", "g", "operator")
	require.NoError(t, err)
	require.Contains(t, out, "dropped operator; 2 of 2 ready")
	cg := s.waitPhase("g", appstudiov1alpha1.PhaseReady)
	require.Equal(t, "2/2", cg.Status.Ready)
	out, err = run("changegroup", "status", "g")
	require.NoError(t, err)
	require.Contains(t, out, "phase:     Ready")
	require.Contains(t, out, "operator")
	require.Equal(t, 1, s.f.CIBuilds(s.ns, "bundle"))
}

// A person lifts the draft (GitHub: "Ready for review"; GitLab: "Mark as ready",
// which drops the Draft: title prefix) while the group waits: that is a release
// request. The held head still carries the skip marker, so the person's click
// starts nothing; nudgeflow's one final push is the one build.
func TestDraftLiftedByPersonReleases(t *testing.T) {
	eachForge(t, func(t *testing.T, f forgeHarness) {
		s := newScenarioOn(t, f, three...)
		s.createGroup("g", three, 0)
		s.explainOnFailure("g")
		s.buildNow("operand-a", 1)
		pr := s.draftPR()
		require.NoError(t, f.MarkReady(s.ns, "bundle", pr.Number))
		cg := s.waitPhase("g", appstudiov1alpha1.PhaseReady)
		require.Equal(t, "1/3", cg.Status.Ready)
		released, _ := f.PR(s.ns, "bundle", pr.Number)
		require.False(t, released.Draft)
		head, _ := f.Head(s.ns, "bundle", pr.Head)
		require.NotContains(t, head.Message, "[skip ci]", "the final commit carries no marker")
		require.Equal(t, digestOf("operand-a", 1), s.csvDigests(pr.Head)["operand-a"])
		require.Equal(t, 1, f.CIBuilds(s.ns, "bundle"), "exactly one build: nudgeflow's final push")
		require.NoError(t, f.Merge(s.ns, "bundle", pr.Number))
		s.waitPhase("g", appstudiov1alpha1.PhaseCompleted)
	})
}
