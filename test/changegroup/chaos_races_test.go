package changegroup_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	"github.com/nudgeflow/nudgeflow/test/world"
	cgwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
)

// Races in the chaos test: per seed, a person pushes to a group's PR branch
// between nudgeflow's read and its branch move (the emulator runs the push right
// before the move), and a forged "merged" event, validly signed with the shared
// webhook secret, arrives for that group's open PR. After every group ended the
// counters are computed from the forge and the groups' status.
var chaosRaceTotals struct {
	mu                         sync.Mutex
	injected, forged           int
	overwritten, forgedEndings int
}

// chaosRace is what one seed injected.
type chaosRace struct {
	group, branch, person string
	number                int
}

// raceDeadline bounds each wait of the race phase. A group there may be between a
// worker killed mid-activity (its start-to-close timeout, then a retry) and a forge
// answering 429 or 502 (the scenario's faults), each costing up to a minute or two
// on a loaded machine: the deadline leaves room for both.
const raceDeadline = 5 * time.Minute

// injectChaosRaces ends the scenario's active group (cancelled: one group collects
// the members at a time), opens a fresh one (open), makes its PR with one build,
// then makes a second push race a person's commit and sends the forged event.
func injectChaosRaces(t *testing.T, s *scenario, active string, open func() string, build func(c string)) chaosRace {
	ctx := context.Background()
	var cg appstudiov1alpha1.ChangeGroup
	if active != "" && s.w.Kube.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: active}, &cg) == nil && !cg.Status.Phase.IsFinal() {
		s.annotate(active, "cancel=chaos: the race group takes over")
		world.Eventually(t, raceDeadline, "the active group "+active+" ended before the race group opens", func() (bool, error) {
			err := s.w.Kube.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: active}, &cg)
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return err == nil && cg.Status.Phase.IsFinal(), err
		})
	}
	name := open()
	build(s.components[0])
	var pr githubemu.PR
	world.Eventually(t, raceDeadline, "the race group's PR opened", func() (bool, error) {
		for _, p := range shared.emu.PRs(s.ns, "bundle") {
			if p.State == "open" && strings.Contains(p.Head, "/"+name+"-") {
				pr = p
				return true, nil
			}
		}
		return false, nil
	})
	race := chaosRace{group: name, branch: pr.Head, number: pr.Number}
	var mu sync.Mutex
	shared.emu.BeforeNextBranchMove(func() {
		sha, err := shared.emu.HumanCommit(s.ns, "bundle", pr.Head, githubemu.User{Login: "alice", Name: "Alice", Email: "alice@example.com"},
			map[string]string{"NOTES.md": "a person's note, pushed while nudgeflow updates the branch\n"}, "docs: note")
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			race.person = sha
		}
	})
	build(s.components[1])
	world.Eventually(t, raceDeadline, "the person's push landed between the read and the branch move", func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return race.person != "", nil
	})
	// The bridge routes a forge event by the PR its groups' status names, read
	// from its cache: an event for a PR no status names yet is dropped (polling
	// covers a lost event). So the forged event is sent once the group's status
	// names its PR, and sent again, as a forge redelivers, until the workflow has it.
	world.Eventually(t, raceDeadline, "the race group's status names its PR", func() (bool, error) {
		return strings.HasSuffix(s.group(name).Status.PullRequestURL, "/pull/"+strconv.Itoa(pr.Number)), nil
	})
	forgedID := sendForgedMerged(t, s, pr.Number)
	sent := time.Now()
	g := s.group(name)
	id := changegroupapi.WorkflowID(g.Namespace, g.Name, string(g.UID))
	// Once a workflow task completed after the forged signal, the workflow has
	// handled it: its state then says whether the event ended the group.
	world.Eventually(t, raceDeadline, "the workflow handled the forged event", func() (bool, error) {
		handled, err := handledSignal(s, id, forgedID)
		if !handled && err == nil && time.Since(sent) > 10*time.Second {
			sendForgedMerged(t, s, pr.Number)
			sent = time.Now()
		}
		return handled, err
	})
	var st cgwf.State
	v, err := s.w.TemporalClient.QueryWorkflow(ctx, id, "", changegroupapi.QueryState)
	require.NoError(t, err)
	require.NoError(t, v.Get(&st))
	if p, ok := shared.emu.PR(s.ns, "bundle", pr.Number); st.Phase.IsFinal() && ok && !p.Merged {
		t.Errorf("the forged merged event ended group %s (%s: %s) while PR #%d is %s on the forge", name, st.Phase, st.Message, pr.Number, p.State)
		chaosRaceTotals.mu.Lock()
		chaosRaceTotals.forgedEndings++
		chaosRaceTotals.mu.Unlock()
	}
	chaosRaceTotals.mu.Lock()
	chaosRaceTotals.injected++
	chaosRaceTotals.forged++
	chaosRaceTotals.mu.Unlock()
	return race
}

// sendForgedMerged posts a pull_request "closed" event with merged set for an open
// PR to the bridge's receiver, signed with the shared secret: valid, and false.
func sendForgedMerged(t *testing.T, s *scenario, number int) string {
	url := fmt.Sprintf("%s/%s/bundle/pull/%d", shared.emu.URL(), s.ns, number)
	body := fmt.Sprintf(`{"action":"closed","number":%d,"pull_request":{"number":%d,"html_url":%q,"state":"closed","merged":true,`+
		`"head":{"ref":"x","sha":"0000000000000000000000000000000000000000"}},"repository":{"full_name":"%s/bundle","html_url":"%s/%s/bundle"}}`,
		number, number, url, s.ns, shared.emu.URL(), s.ns)
	m := hmac.New(sha256.New, []byte(webhookSecret))
	m.Write([]byte(body))
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, shared.forgejo.hookURL, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Set("X-GitHub-Event", "pull_request")
	id := "forged-" + s.ns + "-" + strconv.Itoa(number)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "the forged event is validly signed and accepted by the receiver")
	return id
}

// countChaosRaces counts, once every group ended: a person's commit no longer in
// its PR's history (overwritten), and a group that ended Completed (merged) or
// Cancelled (closed) on its PR while the forge says otherwise (a forged ending).
func countChaosRaces(t *testing.T, s *scenario, race chaosRace, groups []string) {
	overwritten, forged := 0, 0
	if pr, ok := shared.emu.PR(s.ns, "bundle", race.number); !ok || !shared.emu.IsAncestor(s.ns, "bundle", race.person, pr.HeadSHA) {
		t.Errorf("the person's commit %s was overwritten on %s (PR #%d)", race.person, race.branch, race.number)
		overwritten++
	}
	for _, name := range groups {
		var cg appstudiov1alpha1.ChangeGroup
		if err := s.w.Kube.Get(context.Background(), types.NamespacedName{Namespace: s.ns, Name: name}, &cg); err != nil || len(cg.Status.Conditions) == 0 {
			continue
		}
		// The status says why a group ended in its condition's message (the
		// workflow's "the pull request was merged" / "... closed without merging").
		msg := cg.Status.Conditions[0].Message
		onMerge := cg.Status.Phase == appstudiov1alpha1.PhaseCompleted && strings.Contains(msg, "the pull request was merged")
		onClose := cg.Status.Phase == appstudiov1alpha1.PhaseCancelled && strings.Contains(msg, "closed without merging")
		n, err := strconv.Atoi(cg.Status.PullRequestURL[strings.LastIndex(cg.Status.PullRequestURL, "/")+1:])
		if err != nil || (!onMerge && !onClose) {
			continue
		}
		pr, ok := shared.emu.PR(s.ns, "bundle", n)
		if !ok || (onMerge && !pr.Merged) || (onClose && pr.State == "open") {
			t.Errorf("group %s ended %s (%s) while its PR #%d is %s (merged %v) on the forge", name, cg.Status.Phase, msg, n, pr.State, pr.Merged)
			forged++
		}
	}
	chaosRaceTotals.mu.Lock()
	chaosRaceTotals.overwritten += overwritten
	chaosRaceTotals.forgedEndings += forged
	chaosRaceTotals.mu.Unlock()
}

// handledSignal reports whether the workflow's history holds the PR event signal
// with delivery ID id followed by a completed workflow task (or its end).
func handledSignal(s *scenario, workflowID, delivery string) (bool, error) {
	it := s.w.TemporalClient.GetWorkflowHistory(context.Background(), workflowID, "", false, 0)
	seen := false
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return false, err
		}
		if seen && (e.GetWorkflowTaskCompletedEventAttributes() != nil || e.GetWorkflowExecutionCompletedEventAttributes() != nil) {
			return true, nil
		}
		a := e.GetWorkflowExecutionSignaledEventAttributes()
		if a.GetSignalName() != changegroupapi.SignalPREvent {
			continue
		}
		for _, p := range a.GetInput().GetPayloads() {
			var ev changegroupapi.PREvent
			if converter.GetDefaultDataConverter().FromPayload(p, &ev) == nil && ev.DeliveryID == delivery {
				seen = true
			}
		}
	}
	return false, nil
}
