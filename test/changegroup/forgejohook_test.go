package changegroup_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// A person closing or merging the group's PR on the real Gitea server reaches the
// group through the server's webhook (the system webhook to the bridge's receiver,
// signed with X-Gitea-Signature) while every request nudgeflow makes of the forge
// fails, so no poll can explain it: its workflow's history holds the PR event signal
// with the delivery's ID, which only the bridge's webhook router sends (a poll reads
// the PR inside the workflow and signals nothing). The event is a hint: the group
// ends only when the forge answers again and says the PR is closed or merged.
func TestForgejoWebhookReachesTheGroup(t *testing.T) {
	for _, c := range []struct {
		name    string
		merged  bool
		phase   appstudiov1alpha1.ChangeGroupPhase
		message string
	}{
		{"closed", false, appstudiov1alpha1.PhaseCancelled, "closed without merging"},
		{"merged", true, appstudiov1alpha1.PhaseCompleted, "was merged"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fj := shared.forgejo
			s := newScenarioOn(t, fj, "operand-a", "operand-b")
			s.createGroup("g", []string{"operand-a", "operand-b"}, 0)
			s.explainOnFailure("g")
			s.buildNow("operand-a", 1)
			pr := s.draftPR()
			// The group knows its PR once the status names it (the sync that opened
			// it has returned); the webhook routes by that URL.
			s.waitFor("g", "the PR in the status", 60*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool {
				return cg.Status.PullRequestURL != ""
			})
			// From now on every request nudgeflow makes about the repository fails
			// (the proxy in front of the server, as in a forge outage).
			s.f.FailNextFor(s.ns, 1<<20, http.StatusServiceUnavailable, 0)
			prPath := fmt.Sprintf("/repos/%s/bundle/pulls/%d", forgejoOrg(s.ns), pr.Number)
			if c.merged {
				// Gitea refuses to merge a WIP: PR, and one whose mergeability it has
				// not checked yet (405): the person lifts the prefix, then merges.
				code, msg := personAtPublicHost(t, fj, http.MethodPatch, prPath, `{"title":"ready"}`)
				require.Equal(t, http.StatusCreated, code, msg)
				world.Eventually(t, time.Minute, "the person's merge", func() (bool, error) {
					code, msg := personAtPublicHost(t, fj, http.MethodPost, prPath+"/merge", `{"Do":"merge"}`)
					// An attempt the server answered late may have merged: a retry then
					// hears that it is merged, which is the person's goal too.
					if code == http.StatusOK || code == http.StatusMethodNotAllowed && strings.Contains(msg, "already merged") {
						return true, nil
					}
					return false, fmt.Errorf("merge answered %d: %s", code, msg)
				})
			} else {
				code, msg := personAtPublicHost(t, fj, http.MethodPatch, prPath, `{"state":"closed"}`)
				require.Equal(t, http.StatusCreated, code, msg)
			}
			// The event is a hint: it reaches the group while the forge
			// is unreadable, and the group ends only once it reads the PR itself. The
			// signal says neither merged nor closed (a group started before
			// the forge-says-end change would end on it), only the action.
			cg := s.group("g")
			id := changegroupapi.WorkflowID(cg.Namespace, cg.Name, string(cg.UID))
			world.Eventually(t, time.Minute, "the webhook's PR event in the group's history", func() (bool, error) {
				evs, err := prEventSignals(s.w.TemporalClient, id)
				if err != nil {
					return false, err
				}
				for _, ev := range evs {
					if ev.Number == pr.Number && ev.Action == "closed" && !ev.Closed && !ev.Merged && ev.DeliveryID != "" {
						return true, nil
					}
				}
				return false, fmt.Errorf("PR event signals %+v", evs)
			})
			require.False(t, s.group("g").Status.Phase.IsFinal(), "no group ends on an event it could not check on the forge")
			fj.faults.ClearFailuresFor(forgejoOrg(s.ns))
			cg = s.waitPhase("g", c.phase)
			require.Contains(t, cg.Status.Conditions[0].Message, c.message)
		})
	}
}

// personAtPublicHost sends one API request as the person to the server itself, past
// the proxy's injected failures, naming the address nudgeflow uses (the fault
// proxy's) as the request's host, and returns the status. Gitea builds a webhook's
// html_url from the host of the request that caused it (its public URL detection),
// and nudgeflow knows the PR by the proxy's address; a deployment's person and
// nudgeflow share one public host.
func personAtPublicHost(t *testing.T, fj *forgejoForge, method, path, body string) (int, string) {
	t.Helper()
	srv := fj.server()
	public, err := url.Parse(fj.faults.URL)
	require.NoError(t, err)
	req, err := http.NewRequest(method, srv.URL+"/api/v1"+path, bytes.NewBufferString(body))
	require.NoError(t, err)
	req.Host = public.Host
	req.Header.Set("Content-Type", "application/json")
	// The admin merges (as MergePR does: the person may not own the repository).
	req.Header.Set("Authorization", "token "+srv.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "%s %s", method, path)
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(msg)
}

// prEventSignals lists the PR events signalled to a workflow's latest run.
func prEventSignals(c client.Client, workflowID string) ([]changegroupapi.PREvent, error) {
	it := c.GetWorkflowHistory(context.Background(), workflowID, "", false, 0)
	var out []changegroupapi.PREvent
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("reading the history of %s: %w", workflowID, err)
		}
		a := e.GetWorkflowExecutionSignaledEventAttributes()
		if a.GetSignalName() != changegroupapi.SignalPREvent {
			continue
		}
		for _, p := range a.GetInput().GetPayloads() {
			var ev changegroupapi.PREvent
			if err := converter.GetDefaultDataConverter().FromPayload(p, &ev); err != nil {
				return nil, fmt.Errorf("decoding a PR event of %s: %w", workflowID, err)
			}
			out = append(out, ev)
		}
	}
	return out, nil
}
