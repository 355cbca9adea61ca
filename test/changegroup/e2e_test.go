package changegroup_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// buildEvent is one push build of a component; n orders the builds of a component.
type buildEvent struct {
	component string
	n         int
}

// shuffledBuilds puts the first builds of every component in random order and
// slots rebuilds of some of them in after their first build. The last event is
// always a first build: the moment the group is complete is the moment its last
// missing component arrives, as in the ADR's scenario.
func shuffledBuilds(r *rand.Rand, components []string, rebuilt int) []buildEvent {
	order := r.Perm(len(components))
	events := make([]buildEvent, 0, len(components)+rebuilt)
	for _, i := range order {
		events = append(events, buildEvent{component: components[i], n: 1})
	}
	for _, i := range r.Perm(len(components) - 1)[:rebuilt] {
		// Insert the rebuild somewhere after the first build, before the last event.
		first := 0
		for j, e := range events {
			if e.component == events[i].component && e.n == 1 {
				first = j
			}
		}
		at := first + 1 + r.IntN(len(events)-1-first)
		ev := buildEvent{component: events[first].component, n: 2}
		events = append(events[:at], append([]buildEvent{ev}, events[at:]...)...)
	}
	return events
}

// TestChangeGroupE2E is ADR 59's scenario at scale: 30 operand builds arrive in
// random order, five of them twice; nudgeflow collects them into one draft PR with
// CI held, releases CI once with the latest digest of every operand, and completes
// when the PR is merged. It runs once per forge.
func TestChangeGroupE2E(t *testing.T) {
	eachForge(t, changeGroupE2E)
}

func changeGroupE2E(t *testing.T, f forgeHarness) {
	seed := uint64(time.Now().UnixNano())
	if s := envSeed(); s != 0 {
		seed = s
	}
	t.Logf("random order seed %d (set NUDGEFLOW_E2E_SEED to replay)", seed)
	r := rand.New(rand.NewPCG(seed, seed))

	components := make([]string, 30)
	for i := range components {
		components[i] = fmt.Sprintf("operand-%02d", i+1)
	}
	s := newScenarioOn(t, f, components...)
	// No members named: the controller fills them from build-nudges-ref (ADR 59).
	s.createGroup("bundle-update", nil, time.Hour)
	cg := s.waitFor("bundle-update", "components filled from build-nudges-ref", 30*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool {
		return len(cg.Spec.NudgingComponents) == 30 && len(cg.Status.Components) == 30
	})
	for _, c := range cg.Status.Components {
		require.Equal(t, digestOf(c.Name, 0), c.OriginalBuild, "originalBuild of %s comes from its lastPromotedImage", c.Name)
		require.Equal(t, appstudiov1alpha1.ComponentWaiting, c.State)
	}

	events := shuffledBuilds(r, components, 5)
	require.Len(t, events, 35)
	latest := map[string]string{}
	// Builds a minute apart, all finishing while the group is active: the order of
	// their start times is the order the workflow keeps.
	start := time.Now()
	for i, ev := range events {
		digest := digestOf(ev.component, ev.n)
		latest[ev.component] = digest
		nudge := s.build(ev.component, digest, start.Add(time.Duration(i)*time.Minute))
		require.Equal(t, tektonv1.PipelineRunSpecStatus(tektonv1.PipelineRunSpecStatusCancelled), nudge.Spec.Status,
			"the webhook cancels build-service's nudge of a held component")
		require.Equal(t, "bundle=bundle-update", nudge.Annotations[konflux.AnnotationHeldBy])
		if i == 9 {
			// Part way: one draft PR holds what is ready, and CI has not run.
			world.Eventually(t, 30*time.Second, "a draft PR collecting the first builds", func() (bool, error) {
				prs := f.PRs(s.ns, "bundle")
				if len(prs) == 1 && prs[0].Draft {
					return true, nil
				}
				return false, fmt.Errorf("%d PRs", len(prs))
			})
			require.Zero(t, f.CIBuilds(s.ns, "bundle"), "no CI while the group is held")
		}
	}

	cg = s.waitPhase("bundle-update", appstudiov1alpha1.PhaseReady)
	require.Equal(t, "30/30", cg.Status.Ready)
	prs := f.PRs(s.ns, "bundle")
	require.Len(t, prs, 1, "one PR for 35 builds")
	pr := prs[0]
	require.False(t, pr.Draft, "released PRs are ready for review")
	require.Equal(t, cg.Status.PullRequestURL, f.PRURL(s.ns, "bundle", pr.Number))
	require.Equal(t, latest, s.csvDigests(pr.Head), "the final commit holds the latest digest of every operand")
	require.Equal(t, 1, f.CIBuilds(s.ns, "bundle"), "exactly one CI-triggering event")

	require.NoError(t, f.Merge(s.ns, "bundle", pr.Number))
	cg = s.waitPhase("bundle-update", appstudiov1alpha1.PhaseCompleted)
	require.NotNil(t, cg.Status.CompletionTime)
	s.record("bundle-update")
	state := s.query(cg)
	require.Equal(t, 1, f.CIBuilds(s.ns, "bundle"))
	fmt.Printf("changegroup-e2e forge=%s components=%d prs=%d ci_builds=%d forge_writes=%d\n",
		f.Name(), len(latest), len(f.PRs(s.ns, "bundle")), f.CIBuilds(s.ns, "bundle"), state.ForgeWrites)
}

func envSeed() uint64 {
	v, _ := strconv.ParseUint(getenv("NUDGEFLOW_E2E_SEED"), 10, 64)
	return v
}
