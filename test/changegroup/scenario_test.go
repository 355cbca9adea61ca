package changegroup_test

import (
	"context"
	"crypto/sha256"
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
	"k8s.io/apimachinery/pkg/types"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
	cgwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
)

// scenario is one namespace with a bundle repository and its nudging components.
type scenario struct {
	t  *testing.T
	w  *world.World
	ns string
	// f is the forge the bundle repository lives on.
	f          forgeHarness
	components []string
	builds     int
}

func digestOf(component string, n int) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(fmt.Sprintf("%s-%d", component, n))))
}

func imageOf(component string) string { return "quay.io/org/" + component }

// newScenario is newScenarioOn GitHub.
func newScenario(t *testing.T, components ...string) *scenario {
	return newScenarioOn(t, shared.forges[0], components...)
}

// newScenarioOn creates the namespace: forge credentials, the bundle Component and
// its repository on forge f (a CSV referencing every component at its original
// digest), and the nudging Components pointing at the bundle with build-nudges-ref.
func newScenarioOn(t *testing.T, f forgeHarness, components ...string) *scenario {
	w := world.Get(t)
	s := &scenario{t: t, w: w, ns: w.Namespace(t), f: f, components: components}
	ctx := context.Background()
	require.NoError(t, w.Kube.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "forge", Namespace: s.ns, Labels: map[string]string{
			forge.LabelCredentials: "scm", forge.LabelSCMHost: "127.0.0.1"}},
		Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{"username": []byte("nudgeflow"), "password": []byte(f.Token())},
	}))
	var csv strings.Builder
	csv.WriteString("kind: ClusterServiceVersion\nspec:\n  relatedImages:\n")
	for _, c := range components {
		fmt.Fprintf(&csv, "  - name: %s\n    image: %s@%s\n", c, imageOf(c), digestOf(c, 0))
	}
	f.CreateRepo(s.ns, "bundle", "main", map[string]string{
		"bundle/manifests/operator.clusterserviceversion.yaml": csv.String(),
		"README.md": "images are listed in the CSV\n",
	})
	bundle := &mirrorv1alpha1.Component{
		ObjectMeta: metav1.ObjectMeta{Name: "bundle", Namespace: s.ns},
		Spec: mirrorv1alpha1.ComponentSpec{
			ContainerImage: imageOf("bundle"),
			Source:         mirrorv1alpha1.ComponentSource{GitSource: &mirrorv1alpha1.GitSource{URL: f.RepoURL(s.ns, "bundle"), Revision: "main"}},
		},
	}
	if p := f.Provider(); p != "" {
		// 127.0.0.1 names no forge: the annotation does, as build-service reads it.
		bundle.Annotations = map[string]string{mirrorv1alpha1.AnnotationGitProvider: p}
	}
	require.NoError(t, w.Kube.Create(ctx, bundle))
	for _, c := range components {
		comp := &mirrorv1alpha1.Component{
			ObjectMeta: metav1.ObjectMeta{Name: c, Namespace: s.ns},
			Spec: mirrorv1alpha1.ComponentSpec{ContainerImage: imageOf(c), BuildNudgesRef: []string{"bundle"},
				Source: mirrorv1alpha1.ComponentSource{GitSource: &mirrorv1alpha1.GitSource{URL: "https://github.com/org/" + c}}},
		}
		require.NoError(t, w.Kube.Create(ctx, comp))
		require.NoError(t, world.SetStatus(ctx, w.Kube, comp, func() { comp.Status.LastPromotedImage = imageOf(c) + "@" + digestOf(c, 0) }))
	}
	return s
}

func (s *scenario) createGroup(name string, members []string, timeout time.Duration) *appstudiov1alpha1.ChangeGroup {
	return s.createGroupWithTimeout(name, members, timeout, nil)
}

// createGroupWith creates a group applied with these annotations (an override
// already set, as from GitOps).
func (s *scenario) createGroupWith(name string, members []string, annotations map[string]string) *appstudiov1alpha1.ChangeGroup {
	return s.createGroupWithTimeout(name, members, 0, annotations)
}

func (s *scenario) createGroupWithTimeout(name string, members []string, timeout time.Duration, annotations map[string]string) *appstudiov1alpha1.ChangeGroup {
	cg := &appstudiov1alpha1.ChangeGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns, Annotations: annotations},
		Spec:       appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle"},
	}
	for _, m := range members {
		cg.Spec.NudgingComponents = append(cg.Spec.NudgingComponents, appstudiov1alpha1.NudgingComponentRef{Name: m})
	}
	if timeout > 0 {
		cg.Spec.Timeout = &metav1.Duration{Duration: timeout}
	}
	require.NoError(s.t, s.w.Kube.Create(context.Background(), cg))
	return cg
}

func (s *scenario) group(name string) *appstudiov1alpha1.ChangeGroup {
	var cg appstudiov1alpha1.ChangeGroup
	require.NoError(s.t, s.w.Kube.Get(context.Background(), types.NamespacedName{Namespace: s.ns, Name: name}, &cg))
	return &cg
}

// waitFor polls the group until cond holds.
func (s *scenario) waitFor(name, what string, timeout time.Duration, cond func(*appstudiov1alpha1.ChangeGroup) bool) *appstudiov1alpha1.ChangeGroup {
	s.t.Helper()
	var cg appstudiov1alpha1.ChangeGroup
	world.Eventually(s.t, timeout, fmt.Sprintf("ChangeGroup %s: %s", name, what), func() (bool, error) {
		if err := s.w.Kube.Get(context.Background(), types.NamespacedName{Namespace: s.ns, Name: name}, &cg); err != nil {
			return false, err
		}
		if cond(&cg) {
			return true, nil
		}
		return false, fmt.Errorf("phase %q, ready %q, %d members, %d status components, conditions %+v", cg.Status.Phase, cg.Status.Ready, len(cg.Spec.NudgingComponents), len(cg.Status.Components), cg.Status.Conditions)
	})
	return &cg
}

func (s *scenario) waitPhase(name string, phase appstudiov1alpha1.ChangeGroupPhase) *appstudiov1alpha1.ChangeGroup {
	s.t.Helper()
	// Two minutes: on the real Gitea server a phase can take several forge round
	// trips of seconds each when the machine's cores are shared (a passing wait
	// returns as soon as the phase is reached).
	return s.waitFor(name, "phase "+string(phase), 2*time.Minute, func(cg *appstudiov1alpha1.ChangeGroup) bool {
		return cg.Status.Phase == phase
	})
}

// build does what Konflux does when a component's push build succeeds: a build
// PipelineRun with IMAGE_URL/IMAGE_DIGEST results, then build-service's nudge
// PipelineRun. It returns the nudge PipelineRun as the API server stored it.
func (s *scenario) build(component, digest string, completedAt time.Time) *tektonv1.PipelineRun {
	s.t.Helper()
	return s.nudge(component, []string{"bundle"}, s.buildRun(component, digest, completedAt).Name)
}

// buildRun creates a succeeded push build PipelineRun with its results.
func (s *scenario) buildRun(component, digest string, completedAt time.Time) *tektonv1.PipelineRun {
	s.t.Helper()
	return s.buildRunWith(component, digest, completedAt, map[string]string{konflux.AnnotationEventType: "push"})
}

// buildRunWith creates a succeeded build PipelineRun with its results and these
// annotations (without a Pipelines as Code event type the bridge never routes it).
func (s *scenario) buildRunWith(component, digest string, completedAt time.Time, annotations map[string]string) *tektonv1.PipelineRun {
	s.t.Helper()
	ctx := context.Background()
	s.builds++
	buildName := fmt.Sprintf("%s-on-push-%d", component, s.builds)
	build := &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{Name: buildName, Namespace: s.ns,
			Labels:      map[string]string{konflux.LabelComponent: component, konflux.LabelPipelineType: "build"},
			Annotations: annotations},
		Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"}},
	}
	require.NoError(s.t, s.w.Kube.Create(ctx, build))
	require.NoError(s.t, world.SetStatus(ctx, s.w.Kube, build, func() {
		konflux.SucceededBuild{ImageURL: imageOf(component) + ":on-push-abc", Digest: digest,
			Started: completedAt.Add(-time.Minute), Completed: completedAt}.WriteStatus(build)
	}))
	return build
}

// nudge creates build-service's nudge PipelineRun for a build.
func (s *scenario) nudge(component string, targets []string, buildName string) *tektonv1.PipelineRun {
	s.t.Helper()
	plr := &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "renovate-pipeline-", Namespace: s.ns,
			Labels: map[string]string{konflux.LabelNudgeType: konflux.NudgeTypeValue},
			Annotations: map[string]string{
				konflux.AnnotationNudging:    component,
				konflux.AnnotationNudged:     strings.Join(targets, " "),
				konflux.AnnotationNudgingPLR: buildName,
				konflux.AnnotationNudgingImg: imageOf(component) + ":on-push-abc",
			}},
		Spec: tektonv1.PipelineRunSpec{PipelineSpec: &tektonv1.PipelineSpec{Tasks: []tektonv1.PipelineTask{{Name: "renovate"}}}},
	}
	require.NoError(s.t, s.w.Kube.Create(context.Background(), plr))
	return plr
}

// query reads the workflow's state.
func (s *scenario) query(cg *appstudiov1alpha1.ChangeGroup) *cgwf.State {
	s.t.Helper()
	st, err := s.tryQuery(cg)
	require.NoError(s.t, err)
	return st
}

// tryQuery reads the workflow's state for a wait: a query is answered by a workflow
// task, and one that fails transiently (a busy worker, a task being retried) is
// asked again by the wait rather than failing the test.
func (s *scenario) tryQuery(cg *appstudiov1alpha1.ChangeGroup) (*cgwf.State, error) {
	v, err := s.w.TemporalClient.QueryWorkflow(context.Background(), changegroupapi.WorkflowID(cg.Namespace, cg.Name, string(cg.UID)), "", changegroupapi.QueryState)
	if err != nil {
		return nil, fmt.Errorf("querying ChangeGroup %s's workflow: %w", cg.Name, err)
	}
	var st cgwf.State
	if err := v.Get(&st); err != nil {
		return nil, fmt.Errorf("decoding ChangeGroup %s's state: %w", cg.Name, err)
	}
	return &st, nil
}

// csvDigests reads the digests the bundle's CSV references at a ref.
func (s *scenario) csvDigests(ref string) map[string]string {
	s.t.Helper()
	body, ok := s.f.FileAt(s.ns, "bundle", ref, "bundle/manifests/operator.clusterserviceversion.yaml")
	require.True(s.t, ok, "CSV at %s", ref)
	out := map[string]string{}
	for _, line := range strings.Split(body, "\n") {
		if _, ref, ok := strings.Cut(line, "image: "); ok {
			image := digestref.ParseReference(ref)
			out[strings.TrimPrefix(image.Repository, "quay.io/org/")] = image.Digest
		}
	}
	return out
}

func getenv(k string) string { return os.Getenv(k) }

// record stores the group's finished history for the replay tests (only when
// NUDGEFLOW_RECORD_HISTORIES is set; see `make regen-histories`). The GitHub run of
// a test ranging over forges records under the test's own name, as before; the
// other forges' runs record nothing (the workflow's command sequence does not
// depend on the forge: the provider is data in the request).
func (s *scenario) record(name string) {
	s.t.Helper()
	if s.f.Name() != "github" {
		return
	}
	test := strings.TrimSuffix(s.t.Name(), "/github")
	cg := s.group(name)
	s.w.RecordHistory(s.t, filepath.Join(localenv.RepoRoot(), "workflows", "changegroup", "testdata"),
		test+"@"+cgwf.HistoryShape, changegroupapi.WorkflowID(cg.Namespace, cg.Name, string(cg.UID)))
}

// explainOnFailure logs the group's workflow history (event types and failures)
// when the test fails, so a stuck scenario says where it stopped.
func (s *scenario) explainOnFailure(name string) {
	s.t.Cleanup(func() {
		if !s.t.Failed() {
			return
		}
		cg := s.group(name)
		id := changegroupapi.WorkflowID(cg.Namespace, cg.Name, string(cg.UID))
		it := s.w.TemporalClient.GetWorkflowHistory(context.Background(), id, "", false, 0)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				s.t.Logf("history of %s: %v", id, err)
				return
			}
			s.t.Logf("%s %3d %s %s%v%v", e.GetEventTime().AsTime().Format("15:04:05.000"), e.GetEventId(), e.GetEventType(),
				e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName(),
				e.GetActivityTaskTimedOutEventAttributes().GetFailure(), e.GetActivityTaskFailedEventAttributes().GetFailure().GetMessage())
			for _, p := range append(e.GetActivityTaskCompletedEventAttributes().GetResult().GetPayloads(), e.GetWorkflowExecutionSignaledEventAttributes().GetInput().GetPayloads()...) {
				s.t.Logf("      %s %s", e.GetWorkflowExecutionSignaledEventAttributes().GetSignalName(), p.GetData())
			}
		}
	})
}
