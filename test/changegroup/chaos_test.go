package changegroup_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// chaosBuild is one build the scenario made.
type chaosBuild struct {
	component, digest, uid, build, nudgePLR string
	builtAt                                 time.Time
}

// TestChangeGroupChaos drives groups through a seeded random mix of everything that
// happens to them — builds, rebuilds and late older builds, drops, spec edits,
// release-now and rebase, human commits, merges, closes, deletes, worker replicas
// SIGKILLed, forge 5xx and 429, a GraphQL secondary rate limit at release, groups
// applied with an override already set, Renovate faults (chaos_renovate_test.go) —
// then ends every group and checks the rule of issues 9 and 32: every build of
// every member is delivered — its digest is on the base branch, in an open or
// merged PR of its nudge branch, in a merged group PR, or it was nudged by
// build-service's own run (not intercepted) — or superseded by a newer build of the
// same component that was; no push takes a digest backwards; no group is left
// active, and the held-nudge reconciler did not loop. nudgeflow's Renovate runs are
// run by the scripted Renovate (chaos_renovate_test.go) with nudgeflow's own step,
// so the forge, not the run's existence, says what was delivered (a Nudge
// workflow alone proves nothing). The bundle is nudgeable (its forge is
// named), so a hand-back's Nudge really launches one.
// NUDGEFLOW_CHAOS_SEEDS=N runs seeds 1..N; NUDGEFLOW_CHAOS_FAULTS picks the fault
// kinds (enabledChaosFaults).
func TestChangeGroupChaos(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if one, err := strconv.Atoi(os.Getenv("NUDGEFLOW_CHAOS_SEED")); err == nil {
		seeds = []uint64{uint64(one)} // replay one seed
	} else if n, err := strconv.Atoi(os.Getenv("NUDGEFLOW_CHAOS_SEEDS")); err == nil && n > 0 {
		seeds = nil
		for i := 1; i <= n; i++ {
			seeds = append(seeds, uint64(i))
		}
	}
	faults := enabledChaosFaults()
	replicas := startChaosReplicas(t)
	total, delivered := 0, 0
	var lost, misread []string
	injected := map[chaosFault]int{}
	rolledBack := 0
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			r := runChaos(t, seed, faults, replicas)
			total, delivered = total+r.builds, delivered+r.builds-len(r.lost)
			lost, misread = append(lost, r.lost...), append(misread, r.misread...)
			rolledBack += len(r.rolledBack)
			for k, n := range r.injected {
				injected[k] += n
			}
		})
	}
	var kinds []string
	f := 0
	for _, k := range allChaosFaults {
		if injected[k] > 0 {
			kinds = append(kinds, fmt.Sprintf("%s:%d", k, injected[k]))
		}
		f += injected[k]
	}
	fmt.Printf("changegroup-chaos seeds=%d builds=%d delivered=%d lost=%d overwritten_human_commits=%d forged_endings=%d renovate_faults=%d replica_kills=%d rolled_back=%d\n",
		len(seeds), total, delivered, len(lost), chaosRaceTotals.overwritten, chaosRaceTotals.forgedEndings, f, replicas.killed(), rolledBack)
	fmt.Printf("changegroup-chaos races: human_pushes_injected=%d forged_events=%d misread_runs=%d fault_kinds=%s\n",
		chaosRaceTotals.injected, chaosRaceTotals.forged, len(misread), strings.Join(kinds, ","))
	require.Empty(t, lost, "builds lost")
	require.Empty(t, misread, "runs that delivered read as failed")
	require.Zero(t, rolledBack, "digests rolled back")
}

// chaosResult is what one seed counted.
type chaosResult struct {
	builds                    int
	lost, misread, rolledBack []string
	injected                  map[chaosFault]int
}

func runChaos(t *testing.T, seed uint64, faults map[chaosFault]bool, replicas *chaosReplicas) chaosResult {
	rng := rand.New(rand.NewPCG(seed, 9))
	members := []string{"c0", "c1", "c2", "c3"}
	s := newScenario(t, members...)
	s.nudgeable()
	sr := startScriptedRenovate(t, s)
	// The replica kills every seed makes, a worker and a bridge at steps it picks
	// (op 86-90 kill more).
	killWorkerAt, killBridgeAt := rng.IntN(20), rng.IntN(20)
	t.Cleanup(shared.emu.ClearGraphQLFaults)
	ctx := context.Background()
	var builds []chaosBuild
	groups := []string{}
	counter := map[string]int{}
	active := ""
	// newGroup opens the next group; plain ones never carry an override (the race
	// group must open its PR).
	newGroupWith := func(plain bool) {
		name := fmt.Sprintf("g%d", len(groups)+1)
		// Some groups are applied (as from GitOps) with an override already set.
		pick := rng.IntN(4)
		if plain {
			pick = 3
		}
		switch pick {
		case 0:
			t.Logf("seed %d: group %s applied with release-now", seed, name)
			s.createGroupWith(name, members, map[string]string{konflux.AnnotationAction: "release-now"})
		case 1:
			t.Logf("seed %d: group %s applied with cancel", seed, name)
			s.createGroupWith(name, members, map[string]string{konflux.AnnotationAction: "cancel=chaos: cancelled at creation"})
		default:
			s.createGroup(name, members, 0)
		}
		s.explainOnFailure(name)
		groups = append(groups, name)
		active = name
	}
	newGroup := func() { newGroupWith(false) }
	// by says who nudges a build: 0 random, 1 build-service, 2 nudgeflow, 3 the
	// test alone (a Nudge it starts with short retries and no PaC event type on
	// the build, so the bridge starts none with the default tuning under the same ID).
	buildBy := func(c string, at time.Time, by int, fault chaosFault) chaosBuild {
		counter[c]++
		d := digestOf(c, counter[c]+100*int(seed))
		var b *tektonv1.PipelineRun
		if by == 3 {
			b = s.buildRunWith(c, d, at, map[string]string{})
		} else {
			b = s.buildRun(c, d, at)
		}
		sr.push(b.Name, c, d, b.Status.StartTime.Time)
		cb := chaosBuild{component: c, digest: d, uid: string(b.UID), build: b.Name, builtAt: b.Status.StartTime.Time}
		if by == 0 {
			by = 1 + rng.IntN(2)
		}
		if by == 1 {
			cb.nudgePLR = s.nudge(c, []string{"bundle"}, b.Name).Name // build-service nudges it
		} else {
			// nudgeflow nudges it (it took the edge over): the Nudge's own Renovate
			// run is held by the active group, which burns the Nudge's ID.
			// A failed run is retried after seconds, not the default minutes, and
			// a run's end the bridge's signal missed (a bridge killed) is polled
			// for after seconds too.
			req := nudgeapi.Request{Namespace: s.ns, Nudging: c, Nudged: "bundle", Mode: "immediate", Tuning: nudgeapi.Tuning{RetryBackoff: 2 * time.Second, PollInterval: 10 * time.Second},
				Build: nudgeapi.Build{ImageURL: imageOf(c) + ":on-push", Digest: d, PullSpec: imageOf(c) + "@" + d,
					BuildPipelineRun: b.Name, BuildUID: string(b.UID), BuiltAt: b.Status.StartTime.Time}}
			sr.ownNudge(nudgeapi.WorkflowID(s.ns, string(b.UID), "bundle"))
			if fault != "" {
				sr.plan(b.Name, fault)
			}
			require.NoError(t, nudgeapi.Start(ctx, s.w.TemporalClient, taskQueue, req))
		}
		builds = append(builds, cb)
		return cb
	}
	build := func(c string, older bool) {
		at := time.Now()
		if older {
			at = at.Add(-time.Hour) // a build that started long ago finishes late
		}
		buildBy(c, at, 0, "")
	}
	// openPR is the open pull request of a group (not a nudge branch's).
	openPR := func() (githubemu.PR, bool) {
		for _, pr := range shared.emu.PRs(s.ns, "bundle") {
			if pr.State == "open" && !strings.HasPrefix(pr.Head, renovate.BranchPrefix) {
				return pr, true
			}
		}
		return githubemu.PR{}, false
	}
	exists := func(name string) bool {
		var cg appstudiov1alpha1.ChangeGroup
		return s.w.Kube.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: name}, &cg) == nil && cg.DeletionTimestamp.IsZero()
	}
	newGroup()
	for step := 0; step < 20; step++ {
		c := members[rng.IntN(len(members))]
		op := rng.IntN(100)
		t.Logf("seed %d step %d: op %d on %s (group %s)", seed, step, op, c, active)
		if active == "" || !exists(active) || s.group(active).Status.Phase.IsFinal() {
			newGroup()
		}
		switch {
		case op < 40:
			build(c, false)
		case op < 47:
			build(c, true)
		case op < 52:
			s.annotate(active, "drop="+c)
		case op < 57:
			cg := s.group(active)
			patch := ctrlclient.MergeFrom(cg.DeepCopy())
			var refs []appstudiov1alpha1.NudgingComponentRef
			for _, m := range members {
				if m != c || rng.IntN(2) == 0 { // remove c, or put every member back
					refs = append(refs, appstudiov1alpha1.NudgingComponentRef{Name: m})
				}
			}
			cg.Spec.NudgingComponents = refs
			if err := s.w.Kube.Patch(ctx, cg, patch); err != nil && !apierrors.IsConflict(err) {
				t.Logf("seed %d: spec edit refused: %v", seed, err)
			}
		case op < 61:
			{
				// GitHub's secondary rate limit (403, no Retry-After) on the release.
				t.Logf("seed %d: the release of %s meets a GraphQL secondary rate limit", seed, active)
				shared.emu.FailGraphQL(1, githubemu.GraphQLSecondaryLimit)
			}
			s.annotate(active, "release-now")
		case op < 65:
			s.annotate(active, "rebase")
		case op < 70:
			if pr, ok := openPR(); ok {
				_, _ = shared.emu.HumanCommit(s.ns, "bundle", pr.Head, githubemu.User{Login: "alice", Name: "Alice", Email: "alice@example.com"},
					map[string]string{"README.md": fmt.Sprintf("note %d\n", step)}, "docs: note")
			}
		case op < 78:
			if pr, ok := openPR(); ok {
				_ = shared.emu.MergePR(s.ns, "bundle", pr.Number)
			}
		case op < 82:
			if pr, ok := openPR(); ok {
				_ = shared.emu.ClosePR(s.ns, "bundle", pr.Number)
			}
		case op < 86:
			_ = s.w.Kube.Delete(ctx, s.group(active))
		case op < 91:
			replicas.killOne(t, rng, []string{"worker", "bridge"}[rng.IntN(2)])
		default:
			status := []int{502, 429}[rng.IntN(2)]
			shared.emu.FailNextFor(s.ns, 1+rng.IntN(3), status, 1)
		}
		if step == killWorkerAt {
			replicas.killOne(t, rng, "worker")
		}
		if step == killBridgeAt {
			replicas.killOne(t, rng, "bridge")
		}
	}

	race := injectChaosRaces(t, s, active, func() string { newGroupWith(true); return active }, func(c string) { build(c, false) })
	if faults[faultPrunedHeldBuild] {
		// The race group collects: a build it holds loses its build PipelineRun
		// (pruned) before the group ends (merged below, or cancelled).
		b := buildBy(s.components[2], time.Now(), 1, "")
		if pruneHeldBuild(t, s, race.group, b) {
			sr.count(faultPrunedHeldBuild)
		}
	}
	before := reconcileTrouble(t)
	limited := false
	// End every group still collecting: merge its PR if it has one, else cancel it.
	for _, name := range groups {
		if !exists(name) || s.group(name).Status.Phase.IsFinal() {
			t.Logf("seed %d end: group %s is gone, being deleted or ended", seed, name)
			continue
		}
		if !limited && !strings.HasPrefix(s.group(name).Status.Ready, "0/") {
			// A group with a ready member opens its draft PR once the forge answers
			// again (the scenario's faults and restarts may delay it): wait for it, so
			// a release meets the rate limit below.
			_, _ = world.Poll(2*time.Minute, func() (bool, error) {
				pr, ok := openPR()
				return ok && strings.Contains(pr.Head, "/"+name+"-"), nil
			})
		}
		if pr, ok := openPR(); ok && strings.Contains(pr.Head, "/"+name+"-") {
			if pr.Draft && !limited {
				// The release meets GitHub's secondary rate limit (403, no Retry-After):
				// it waits and releases, the group does not fail.
				limited = true
				t.Logf("seed %d end: releasing group %s through a GraphQL secondary rate limit", seed, name)
				shared.emu.FailGraphQL(1, githubemu.GraphQLSecondaryLimit)
				s.annotate(name, "release-now")
				world.Eventually(t, 3*time.Minute, fmt.Sprintf("seed %d: PR #%d of group %s released", seed, pr.Number, name), func() (bool, error) {
					got, _ := shared.emu.PR(s.ns, "bundle", pr.Number)
					if got.Draft || s.group(name).Status.Phase == appstudiov1alpha1.PhaseFailed {
						return true, nil
					}
					return false, fmt.Errorf("draft %v, phase %s", got.Draft, s.group(name).Status.Phase)
				})
				require.NotEqual(t, appstudiov1alpha1.PhaseFailed, s.group(name).Status.Phase, "a rate limit at release does not fail the group")
			}
			t.Logf("seed %d end: merging PR #%d of group %s (%s): %v", seed, pr.Number, name, s.group(name).Status.Phase,
				shared.emu.MergePR(s.ns, "bundle", pr.Number))
		} else {
			t.Logf("seed %d end: cancelling group %s (%s; open PR: %v %s)", seed, name, s.group(name).Status.Phase, ok, pr.Head)
			s.annotate(name, "cancel=chaos: the scenario ends")
		}
	}
	for _, name := range groups {
		world.Eventually(t, 3*time.Minute, fmt.Sprintf("seed %d: group %s ended", seed, name), func() (bool, error) {
			var cg appstudiov1alpha1.ChangeGroup
			err := s.w.Kube.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: name}, &cg)
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			if err != nil {
				return false, err
			}
			if !cg.Status.Phase.IsFinal() {
				return false, fmt.Errorf("phase %q", cg.Status.Phase)
			}
			return true, nil
		})
	}

	// No group collects now: every run is nudgeflow's own and reaches the
	// scripted Renovate, which injects each enabled fault into one build's run.
	for _, k := range allChaosFaults {
		if faults[k] && runnerFault(k) {
			c := members[rng.IntN(len(members))]
			t.Logf("seed %d: %s on a build of %s", seed, k, c)
			fb := buildBy(c, time.Now(), 3, k)
			// One at a time: a later build of the same component would supersede
			// this one before its run met the fault.
			id := nudgeapi.WorkflowID(s.ns, fb.uid, "bundle")
			_, _ = world.Poll(2*time.Minute, func() (bool, error) {
				d, err := s.w.TemporalClient.DescribeWorkflowExecution(ctx, id, "")
				return err == nil && d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
			})
		}
	}
	if faults[faultBuildsRace] {
		// Two builds of one component race to its nudge branch: the newer's Nudge
		// starts first, the older's right after it.
		c := members[rng.IntN(len(members))]
		now := time.Now()
		newer := buildBy(c, now, 3, "")
		older := buildBy(c, now.Add(-10*time.Second), 3, "")
		t.Logf("seed %d: builds %s (older) and %s race to %s", seed, older.build, newer.build, nudgeBranch("bundle", c))
		sr.count(faultBuildsRace)
	}

	// Hand-backs are asynchronous: wait, with a deadline, for every build to arrive.
	var lost []string
	_, _ = world.Poll(2*time.Minute, func() (bool, error) {
		lost = chaosLost(s, builds)
		return len(lost) == 0, nil
	})
	for _, l := range lost {
		t.Errorf("seed %d: lost %s", seed, l)
	}
	countChaosRaces(t, s, race, groups)
	if len(lost) > 0 {
		explainChaos(t, s, builds, groups)
	}
	for _, name := range groups {
		var cg appstudiov1alpha1.ChangeGroup
		if err := s.w.Kube.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: name}, &cg); err == nil && len(lost) > 0 {
			t.Logf("seed %d: group %s ended %s (%s): %s", seed, name, cg.Status.Phase, cg.Status.Conditions[0].Reason, cg.Status.Conditions[0].Message)
		}
	}
	// The bound: a Temporal or API blip may fail a reconcile once or twice while
	// groups end; a loop (the 1 Hz requeue this replaced) would add dozens.
	require.LessOrEqual(t, reconcileTrouble(t)-before, 5.0, "seed %d: the held-nudge reconciler looped", seed)
	misread := sr.misread()
	for _, m := range misread {
		t.Errorf("seed %d: %s", seed, m)
	}
	sr.mu.Lock()
	defer sr.mu.Unlock()
	for _, r := range sr.rolledBack {
		t.Errorf("seed %d: rolled back: %s", seed, r)
	}
	return chaosResult{builds: len(builds), lost: lost, misread: misread, rolledBack: sr.rolledBack, injected: sr.injected}
}

// chaosLost lists the builds no path delivered.
func chaosLost(s *scenario, builds []chaosBuild) []string {
	ctx := context.Background()
	merged := map[string]bool{} // component@digest in a merged PR
	for _, pr := range shared.emu.PRs(s.ns, "bundle") {
		if !pr.Merged {
			continue
		}
		for c, d := range s.csvDigestsAt(pr.HeadSHA) {
			merged[c+"@"+d] = true
		}
	}
	direct := func(b chaosBuild) bool {
		if merged[b.component+"@"+b.digest] {
			return true
		}
		if deliveredOnForge(s, b.component, b.digest) {
			return true // nudgeflow's Renovate run delivered it (the forge says so)
		}
		var plr tektonv1.PipelineRun
		if b.nudgePLR == "" {
			return false
		}
		if err := s.w.Kube.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: b.nudgePLR}, &plr); err == nil &&
			plr.Spec.Status != tektonv1.PipelineRunSpecStatusCancelled {
			return true // not intercepted: build-service's own nudge ran
		}
		return false
	}
	// A delivered build covers every build of its component started no later:
	// Kubernetes times have one-second resolution, so of two builds started in the
	// same second neither is newer, and the workflow may keep either (the later
	// delivered; the bridge's two paths deliver in any order).
	newestDelivered := map[string]time.Time{}
	for _, b := range builds {
		if direct(b) && b.builtAt.After(newestDelivered[b.component]) {
			newestDelivered[b.component] = b.builtAt
		}
	}
	var lost []string
	for _, b := range builds {
		if newest, ok := newestDelivered[b.component]; ok && !b.builtAt.After(newest) {
			continue
		}
		if direct(b) {
			continue
		}
		lost = append(lost, fmt.Sprintf("%s %s (build %s, nudge %s)", b.component, b.digest[:19], b.uid, b.nudgePLR))
	}
	return lost
}

// csvDigestsAt reads the digests the bundle's CSV references at a commit.
func (s *scenario) csvDigestsAt(sha string) map[string]string {
	body, ok := shared.emu.FileAt(s.ns, "bundle", sha, "bundle/manifests/operator.clusterserviceversion.yaml")
	out := map[string]string{}
	if !ok {
		return out
	}
	for _, line := range strings.Split(body, "\n") {
		if _, ref, ok := strings.Cut(line, "image: "); ok {
			image := digestref.ParseReference(ref)
			out[strings.TrimPrefix(image.Repository, "quay.io/org/")] = image.Digest
		}
	}
	return out
}

// explainChaos logs what each build's nudge PipelineRun says and what each group's
// workflow held, so a loss points at its path.
func explainChaos(t *testing.T, s *scenario, builds []chaosBuild, groups []string) {
	ctx := context.Background()
	for _, b := range builds {
		var plr tektonv1.PipelineRun
		_ = s.w.Kube.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: b.nudgePLR}, &plr)
		t.Logf("build %s %s builtAt %s nudge %s status %q annotations %v", b.component, b.digest[:19], b.builtAt.Format("15:04:05"),
			b.nudgePLR, plr.Spec.Status, plr.Annotations)
	}
	var list []string
	resp, err := s.w.TemporalClient.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("KubeNamespace = '%s'", s.ns)})
	if err == nil {
		for _, e := range resp.GetExecutions() {
			line := e.GetExecution().GetWorkflowId() + " " + e.GetStatus().String()
			if strings.HasPrefix(e.GetExecution().GetWorkflowId(), "nudge/") && e.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
				var res nudgeapi.Result
				if err := s.w.TemporalClient.GetWorkflow(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()).Get(ctx, &res); err == nil {
					line += fmt.Sprintf(" %s %s: %s", res.Phase, res.Digest, res.Reason)
				}
			}
			list = append(list, line)
		}
	}
	t.Logf("workflows: %s", strings.Join(list, "\n  "))
}
