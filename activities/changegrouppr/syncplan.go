package changegrouppr

import (
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/pac"
)

// syncPlan is what a sync does to an open PR, decided from what was read, before
// anything is written.
type syncPlan struct {
	// staleRebase: the rebase was asked for on an older head. Its checkbox is
	// cleared, and the sync discards nothing (req.Overwrite no longer holds).
	staleRebase bool
	// humanEdit is why automated updates stop (a person's commit or edit of the
	// managed section), humanEditKey names that edit: one comment explains it, and
	// nothing else is written.
	humanEdit, humanEditKey string
	// releasedByHuman: a person released the hold; the workflow decides what
	// follows, and nothing is written.
	releasedByHuman bool
}

// planSync decides what a sync does to the open PR st (no forge call).
func planSync(f forge.Forge, req changegroupprapi.SyncRequest, st state) syncPlan {
	var p syncPlan
	overwrite := req.Overwrite
	if staleRebase(f, req, st) {
		p.staleRebase, overwrite = true, false
	}
	if reason, key := humanEdit(f, st); reason != "" && !overwrite {
		p.humanEdit, p.humanEditKey = reason, key
		return p
	}
	p.releasedByHuman = req.Mode == changegroupprapi.ModeHold && (!isDraft(st) || !st.body.SkipMarker) && !overwrite
	return p
}

// staleRebase: a rebase may discard the branch's commits only up to the head it was
// requested on.
func staleRebase(f forge.Forge, req changegroupprapi.SyncRequest, st state) bool {
	return req.Overwrite && req.DiscardHead != "" && st.hasHead && st.head.SHA != req.DiscardHead && !isBot(f, st.head)
}

// writes are the writes that bring an open PR to the desired tree and
// description, made by applyWrites in this order: the held push, the description
// (lifting the draft when it is one), the final push.
type writes struct {
	// heldPush pushes the desired tree with the skip marker; the push itself
	// looks first and writes nothing when the head holds it (pushIfNeeded).
	heldPush bool
	// body is the new description; nil when it is unchanged.
	body *string
	// markReady lifts the draft, with body in the same request where the forge
	// allows.
	markReady bool
	// finalPush is the release: one commit without the marker (the one build).
	finalPush bool
}

// planWrites decides the writes (no forge call). Holding: the held tree, then the
// description. Releasing: (1) the description without the marker (edited: no
// build), (2) lift the draft while the head still holds [skip ci]
// (ready_for_review: no build), (3) one final commit without the marker
// (synchronize: the one build). (1) and (2) are one request where the forge
// allows.
func planWrites(f forge.Forge, st state, body string, hold bool) writes {
	var w writes
	if st.pr.Body != body {
		w.body = &body
	}
	if hold {
		w.heldPush = true
		return w
	}
	if st.pr.Draft {
		// Only the marker matters for ready_for_review: a held commit of nudgeflow's
		// is enough, whatever digests it carries (the final commit has the new ones).
		w.heldPush = !st.hasHead || !isBot(f, st.head) || !pac.HasSkipMarker(st.head.Message)
		w.markReady = true
	}
	w.finalPush = true
	return w
}
