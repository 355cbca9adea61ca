package nudgewrite

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/contracts/nudgewriteapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
)

// facts are what the writer read before it writes anything.
type facts struct {
	// changes are the files of the base branch the build's digest changes (none:
	// every reference already holds it); found: some file references the image.
	changes map[string][]byte
	found   bool
	// branch: the nudge branch exists, at head; headOurs: head is the writer's
	// identity's (Renovate's gitAuthor) as author and committer; headHolds: head's
	// tree is exactly the base's with the changes.
	branch    bool
	head      forge.Commit
	headOurs  bool
	headHolds bool
	// pr is the open pull request of the branch (hasPR false: none open).
	pr    forge.PR
	hasPR bool
	// builtAt is the request's build start as a trailer stamp ("" unknown).
	builtAt string
	// reattempt: the forge's auto-merge is enabled again on an open PR (Renovate's
	// reattemptPlatformAutomerge: GitHub, GitLab).
	reattempt bool
}

// plan is what the writer does: an outcome with nothing to write, or the writes.
type plan struct {
	// outcome is set when nothing is written (AlreadyCurrent, Superseded,
	// PersonCommitted); reason says why.
	outcome, reason string
	// push a fresh commit of the changes on the base head.
	push bool
	// open a pull request (none is open); edit the open one's title and body.
	open, edit bool
	// labels to add to and unlabel to remove from the open pull request.
	labels, unlabel []string
	// automerge enables the forge's auto-merge on the pull request.
	automerge bool
}

// decide plans one write (no forge call). The order is the Renovate path's: the
// run's step refuses an older build before Renovate runs (branchcheck.go); then
// Renovate finds nothing to update, or a branch someone else committed on.
func decide(f facts, s shape, body string) plan {
	if f.branch && f.builtAt != "" {
		// Stamps have one fixed width: they compare as strings, as the step's do.
		if at := trailer(f.head.Message, renovate.TrailerBuiltAt); stampRE.MatchString(at) && at > f.builtAt {
			return plan{outcome: nudgewriteapi.OutcomeSuperseded, reason: fmt.Sprintf(
				"branch %s holds commit %s of a build started %s (%s), newer than this build (started %s): not writing the older digest over it",
				s.Branch, short(f.head.SHA), at, runOrUnnamed(trailer(f.head.Message, renovate.TrailerRun)), f.builtAt)}
		}
	}
	if len(f.changes) == 0 {
		reason := "every reference to the image in the files the nudge may edit already holds this digest"
		if !f.found {
			reason = "no file the nudge may edit references the image"
		}
		return plan{outcome: nudgewriteapi.OutcomeAlreadyCurrent, reason: reason}
	}
	if f.branch && !f.headOurs && !(f.hasPR && rebaseRequested(f.pr.Body)) {
		return plan{outcome: nudgewriteapi.OutcomePersonCommitted, reason: fmt.Sprintf(
			"commit %s on branch %s was made by %s, not by the nudge's identity; it is not written over (tick the rebase/retry box of the pull request to let it be)",
			short(f.head.SHA), s.Branch, f.head.Author.Email)}
	}
	p := plan{push: !f.branch || !f.headOurs || !f.headHolds}
	if !f.hasPR {
		p.open, p.automerge = true, s.Automerge
		return p
	}
	p.edit = f.pr.Title != s.Title || f.pr.Body != body
	p.automerge = s.Automerge && f.reattempt
	p.labels, p.unlabel = labelChanges(f.pr, s.Labels)
	return p
}

// labelChanges are the labels to add to and remove from an open pull request so
// it carries want, changed as Renovate changes them (shouldUpdateLabels): only
// when its debug record says which labels were set, the PR still carries
// exactly those (a person's label edits are left alone), and want differs.
func labelChanges(pr forge.PR, want []string) (add, remove []string) {
	d, ok := readDebug(pr.Body)
	if !ok || d.Labels == nil || !sameSet(d.Labels, pr.Labels) || sameSet(d.Labels, want) {
		return nil, nil
	}
	return missing(pr.Labels, want), missing(want, pr.Labels)
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// stampRE is a trailer stamp as the step accepts it (anything else fails open).
var stampRE = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z$`)

// trailer is the value of the last "key: value" line of a commit message.
func trailer(message, key string) string {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `:[ \t]*(\S+)[ \t]*$`)
	m := re.FindAllStringSubmatch(message, -1)
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1][1]
}

func runOrUnnamed(run string) string {
	if run == "" {
		return "run unnamed"
	}
	return "run " + run
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
