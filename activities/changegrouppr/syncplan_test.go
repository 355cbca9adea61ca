package changegrouppr

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/prbody"
)

// botForge answers only Bot(): the plans read nothing else of a forge, so any
// forge call they made would panic here.
type botForge struct{ forge.Forge }

var bot = forge.Signature{Name: "nudgeflow", Email: "bot@example.com"}

func (botForge) Bot() forge.Signature { return bot }

var (
	person    = forge.Signature{Name: "someone", Email: "someone@example.com"}
	heldByBot = forge.Commit{SHA: "b0b0b0b0b0", Author: bot, Committer: bot, Message: "chore(deps): update x [skip ci]"}
	finalBot  = forge.Commit{SHA: "f1f1f1f1f1", Author: bot, Committer: bot, Message: "chore(deps): update x"}
	byPerson  = forge.Commit{SHA: "c0ffee0000", Author: person, Committer: person, Message: "fix"}
)

// held is an open draft held by nudgeflow, its head c.
func held(c forge.Commit) state {
	return state{found: true, pr: forge.PR{Number: 7, Open: true, Draft: true, Body: "held"}, head: c, hasHead: true,
		body: prbody.Parsed{Managed: true, SkipMarker: true}}
}

// TestPlanSyncDecidesFromTheReadAlone: what a sync does to an open PR follows from
// the request and what was read, with no forge call.
func TestPlanSyncDecidesFromTheReadAlone(t *testing.T) {
	hold := changegroupprapi.SyncRequest{Mode: changegroupprapi.ModeHold}
	release := changegroupprapi.SyncRequest{Mode: changegroupprapi.ModeRelease}
	rebaseOn := func(head string) changegroupprapi.SyncRequest {
		return changegroupprapi.SyncRequest{Mode: changegroupprapi.ModeHold, Overwrite: true, DiscardHead: head}
	}
	notDraft := held(heldByBot)
	notDraft.pr.Draft, notDraft.body.SkipMarker = false, false
	for name, tc := range map[string]struct {
		req  changegroupprapi.SyncRequest
		st   state
		want syncPlan
	}{
		"held, nudgeflow's head: update":     {hold, held(heldByBot), syncPlan{}},
		"a person's commit: explain, stop":   {hold, held(byPerson), syncPlan{humanEdit: "commit c0ffee0 on the branch was made by someone@example.com, not by nudgeflow", humanEditKey: "commit-" + byPerson.SHA}},
		"rebase on that commit: update":      {rebaseOn(byPerson.SHA), held(byPerson), syncPlan{}},
		"rebase on an older head: stale":     {rebaseOn("older"), held(byPerson), syncPlan{staleRebase: true, humanEdit: "commit c0ffee0 on the branch was made by someone@example.com, not by nudgeflow", humanEditKey: "commit-" + byPerson.SHA}},
		"hold lifted by a person: leave it":  {hold, notDraft, syncPlan{releasedByHuman: true}},
		"release of a lifted hold: update":   {release, notDraft, syncPlan{}},
		"rebase of a lifted hold: update":    {rebaseOn(""), notDraft, syncPlan{}},
		"edited description: explain, stop":  {hold, func() state { s := held(heldByBot); s.body.HumanEdited = true; return s }(), syncPlan{humanEdit: "the section of the description nudgeflow manages was edited", humanEditKey: "body-e3b0c44298fc1c14"}},
		"edited description, rebase: update": {rebaseOn(heldByBot.SHA), func() state { s := held(heldByBot); s.body.HumanEdited = true; return s }(), syncPlan{}},
		"no drafts, held by the marker: keep": {hold, func() state {
			s := held(heldByBot)
			s.pr.Draft = false
			s.body.State = &prbody.State{NoDraft: true}
			return s
		}(), syncPlan{}},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, planSync(botForge{}, tc.req, tc.st))
		})
	}
}

// TestPlanWritesOrdersTheRelease: holding pushes the held tree and then the
// description; releasing lifts the draft (on a held commit of nudgeflow's) before
// the one final push, and a description left as it is is not written.
func TestPlanWritesOrdersTheRelease(t *testing.T) {
	body := "new"
	notDraft := held(finalBot)
	notDraft.pr.Draft = false
	for name, tc := range map[string]struct {
		st   state
		body string
		hold bool
		want writes
	}{
		"hold, description as it is": {held(heldByBot), "held", true, writes{heldPush: true}},
		"hold, new description":      {held(heldByBot), body, true, writes{heldPush: true, body: &body}},
		"release of a held draft":    {held(heldByBot), body, false, writes{body: &body, markReady: true, finalPush: true}},
		"release, head not held":     {held(finalBot), "held", false, writes{heldPush: true, markReady: true, finalPush: true}},
		"release, a person's head":   {held(byPerson), "held", false, writes{heldPush: true, markReady: true, finalPush: true}},
		"release, no head":           {func() state { s := held(heldByBot); s.hasHead = false; return s }(), "held", false, writes{heldPush: true, markReady: true, finalPush: true}},
		"release of a normal PR":     {notDraft, body, false, writes{body: &body, finalPush: true}},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, planWrites(botForge{}, tc.st, tc.body, tc.hold))
		})
	}
}
