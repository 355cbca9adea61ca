// Package prgroup is the PRGroup workflow of ADR 29: one per (namespace, PR group,
// nudged component). Pull-request builds of nudging components in the group
// propose their digests to the nudged component as one draft pull request on
// `<group>@nudgeflow-<target>`; the PR names every originating PR and stays a draft
// while any of them is open. When the last one closes, the merged ones' digests are
// replaced by their push builds' and the draft is lifted; when all close unmerged,
// the PR is closed with a comment.
//
// Signals carry events (a PR build, an originating PR's forge event); the
// workflow's state is the truth and forge reads decide (signals are hints, a poll is
// the fallback). Updates carry the overrides: close, release now.
package prgroup

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
)

// WorkflowName is the registered name; never change it (histories replay by name).
const WorkflowName = "PRGroup"

// HistoryShape names the command sequence of this version, for stored histories
// ("v1" before changeVerifyBuilds).
const HistoryShape = changeVerifyBuilds

// Signals, the query and the updates.
const (
	// SignalPRBuild carries a PRBuild.
	SignalPRBuild = "pr-build"
	// SignalOriginEvent carries an OriginEvent: look at the originating PRs again.
	SignalOriginEvent = "origin-event"
	QueryState        = "state"
	// UpdateClose closes the target PR with a comment (the argument, optional) and ends.
	UpdateClose = "close"
	// UpdateReleaseNow lifts the draft now, whatever the originating PRs' states.
	UpdateReleaseNow = "release-now"
)

// Phases, as the Phase search attribute shows them.
const (
	PhaseProposing = "Proposing" // no PR yet
	PhaseDraft     = "Draft"     // originating PRs open
	PhaseWaiting   = "WaitingForPushBuilds"
	PhaseReady     = "Ready"
	PhaseMerged    = "Merged"
	PhaseClosed    = "Closed"
	phaseEnded     = "Ended" // nothing to propose
)

// Where a digest comes from.
const (
	fromPullRequest = "pull-request"
	fromPush        = "push"
)

// Origin states.
const (
	originOpen    = "Open"
	originMerged  = "Merged"
	originClosed  = "Closed"
	originUnknown = "Unknown"
)

// BranchSuffix starts the suffix of every target branch: `<group>@nudgeflow-<target>`.
const BranchSuffix = "nudgeflow"

// GroupOf is the PR group of a source branch: the part before the first "@".
func GroupOf(sourceBranch string) string {
	g, _, _ := strings.Cut(sourceBranch, "@")
	return g
}

// branch is the target PR's head branch: deterministic per group and target, so two
// targets in one repository never share a branch, and a target PR's own builds stay
// in the group.
func branch(group, target string) string { return group + "@" + BranchSuffix + "-" + target }

// WorkflowID is deterministic per (namespace, group, target).
func WorkflowID(namespace, group, target string) string {
	return fmt.Sprintf("prgroup/%s/%s/%s", namespace, group, target)
}

// OriginRef names an originating PR.
type OriginRef struct {
	// RepoURL is the repository's clone URL (https://host/owner/repo).
	RepoURL string `json:"repoURL"`
	Number  int    `json:"number"`
}

// Key is "owner/repo#N" in lower case (what a forge event names).
func (o OriginRef) Key() string { return OriginKey(o.RepoURL, o.Number) }

// OriginKey is "owner/repo#N" in lower case for a repository URL or full name.
func OriginKey(repo string, number int) string {
	repo = strings.TrimSuffix(strings.TrimSpace(repo), ".git")
	if i := strings.Index(repo, "://"); i >= 0 {
		repo = repo[i+3:]
		if j := strings.Index(repo, "/"); j >= 0 {
			repo = repo[j+1:]
		}
	}
	return fmt.Sprintf("%s#%d", strings.ToLower(strings.Trim(repo, "/")), number)
}

// PRBuild is a succeeded pull-request build of a nudging component. No secrets.
// The workflow proposes it only once the cluster vouches for it
// (changeVerifyBuilds): anyone who reaches Temporal can send this signal.
type PRBuild struct {
	Component string `json:"component"`
	// Namespace is the namespace the build is of, when the sender names it: it must
	// be the workflow's (empty: the workflow's).
	Namespace string `json:"namespace,omitempty"`
	// Build is the pull-request build, whole.
	imagebuild.Build
	SourceBranch string    `json:"sourceBranch"`
	Origin       OriginRef `json:"origin"`
}

// OriginEvent says an originating PR changed (a forge webhook); the workflow reads
// the forge to learn what.
type OriginEvent struct {
	Key        string `json:"key"`
	Action     string `json:"action,omitempty"`
	DeliveryID string `json:"deliveryID,omitempty"`
}

// Settings tune the workflow; zero values mean the defaults.
type Settings struct {
	// PollInterval: how often the originating PRs and the target PR are read when
	// no event arrives.
	PollInterval time.Duration `json:"pollInterval,omitempty"`
	// PushBuildWait: how long after a merge the push build may take before the
	// target PR says it is still waiting for it.
	PushBuildWait time.Duration `json:"pushBuildWait,omitempty"`
	// FileMatch selects files to edit (default: build-service's).
	FileMatch []string `json:"fileMatch,omitempty"`
}

// Defaults.
const (
	DefaultPollInterval  = 5 * time.Minute
	defaultPushBuildWait = 2 * time.Hour
)

func (s Settings) withDefaults() Settings {
	if s.PollInterval <= 0 {
		s.PollInterval = DefaultPollInterval
	}
	if s.PushBuildWait <= 0 {
		s.PushBuildWait = defaultPushBuildWait
	}
	return s
}

// Input starts (or continues) the workflow.
type Input struct {
	Namespace string   `json:"namespace"`
	Group     string   `json:"group"`
	Target    string   `json:"target"`
	Settings  Settings `json:"settings"`
	// State is carried through continue-as-new; nil on the first run.
	State *State `json:"state,omitempty"`
}

// Origin is an originating PR as the workflow knows it.
type Origin struct {
	OriginRef
	URL            string `json:"url,omitempty"`
	Title          string `json:"title,omitempty"`
	State          string `json:"state"`
	HeadSHA        string `json:"headSHA,omitempty"`
	MergeCommitSHA string `json:"mergeCommitSHA,omitempty"`
	// MergedSeenAt is when the workflow first saw the merge (workflow time).
	MergedSeenAt time.Time `json:"mergedSeenAt,omitempty"`
}

// Entry is one digest of one component from one originating PR.
type Entry struct {
	Component string `json:"component"`
	Origin    string `json:"origin"` // OriginRef.Key
	From      string `json:"from"`   // FromPullRequest or FromPush
	imagebuild.Build
}

// PRRef is the target PR once opened.
type PRRef struct {
	Number int    `json:"number,omitempty"`
	URL    string `json:"url,omitempty"`
}

// State is the workflow's whole state (the query's answer, continue-as-new's carry).
type State struct {
	Phase   string   `json:"phase"`
	Origins []Origin `json:"origins"`
	// Entries are the newest pull-request build per (component, origin) and the push
	// build of a merged origin's component.
	Entries []Entry `json:"entries"`
	PR      PRRef   `json:"pr"`
	// MergedEarly: the target PR was merged while it was still a draft (out of
	// order); a follow-up PR carries the push builds' digests.
	MergedEarly []PRRef `json:"mergedEarly,omitempty"`
	// Released: the release-now override lifted the draft.
	Released bool `json:"released,omitempty"`
	// Notes say what nudgeflow could not do and why (shown in the PR and the query).
	Notes []string `json:"notes,omitempty"`
	// Reason is why the workflow ended.
	Reason string `json:"reason,omitempty"`
	// CloseRequested is the reason of a close override accepted but not yet
	// carried out (carried through continue-as-new).
	CloseRequested string `json:"closeRequested,omitempty"`
	// BuildVerdicts are the verdicts on the latest PR builds received
	// (changeVerifyBuilds): a build is verified when it enters, never again; a
	// refused one is proposed nowhere.
	BuildVerdicts []BuildVerdict `json:"buildVerdicts,omitempty"`
}

// BuildVerdict is what the cluster said of one PR build.
type BuildVerdict struct {
	Component string `json:"component"`
	Digest    string `json:"digest"`
	BuildUID  string `json:"buildUID,omitempty"`
	buildcheck.Verdict
}

// maxBuildVerdicts bounds State.BuildVerdicts: the latest are kept.
const maxBuildVerdicts = 50

// verdictOf is the verdict recorded on b, if any.
func (s *State) verdictOf(b PRBuild) *BuildVerdict {
	for i := range s.BuildVerdicts {
		if v := &s.BuildVerdicts[i]; v.Component == b.Component && v.Digest == b.Digest && v.BuildUID == b.BuildUID {
			return v
		}
	}
	return nil
}

// recordVerdict keeps the verdict on b, bounded.
func (s *State) recordVerdict(b PRBuild, v buildcheck.Verdict) {
	s.BuildVerdicts = append(s.BuildVerdicts, BuildVerdict{Component: b.Component, Digest: b.Digest, BuildUID: b.BuildUID, Verdict: v})
	if len(s.BuildVerdicts) > maxBuildVerdicts {
		s.BuildVerdicts = slices.Delete(s.BuildVerdicts, 0, len(s.BuildVerdicts)-maxBuildVerdicts)
	}
}

// isNew reports whether addBuild would change the state: a resent or older
// build is not worth verifying.
func (s *State) isNew(b PRBuild) bool {
	key := b.Origin.Key()
	for _, old := range s.Entries {
		if old.Component == b.Component && old.Origin == key && old.From == fromPullRequest {
			return old.BuildUID != b.BuildUID && !b.BuiltAt.Before(old.BuiltAt)
		}
	}
	return true
}

// carriedBuilds are the PR builds a state holds, as signals would have brought
// them: what an untrusted state (Workflow) is allowed to keep, once verified.
func (s *State) carriedBuilds() []PRBuild {
	var out []PRBuild
	for _, e := range s.Entries {
		if e.From != fromPullRequest {
			continue
		}
		b := PRBuild{Component: e.Component, Build: e.Build}
		if o := s.origin(e.Origin); o != nil {
			b.Origin = o.OriginRef
		}
		out = append(out, b)
	}
	return out
}

func (s *State) origin(key string) *Origin {
	for i := range s.Origins {
		if s.Origins[i].Key() == key {
			return &s.Origins[i]
		}
	}
	return nil
}

// maxNotes bounds State.Notes: the latest are kept.
const maxNotes = 8

// noteKind is what makes two notes the same kind: the text before the first ": "
// (error texts vary after it, "owner/repo#1 could not be read: <error>").
func noteKind(n string) string {
	k, _, _ := strings.Cut(n, ": ")
	return k
}

// note records n, replacing a note of the same kind (moved to the end, the
// latest), and keeps the latest MaxNotes: notes never grow without bound across polls.
func (s *State) note(n string) {
	kind := noteKind(n)
	s.Notes = slices.DeleteFunc(s.Notes, func(old string) bool { return noteKind(old) == kind })
	s.Notes = append(s.Notes, n)
	if len(s.Notes) > maxNotes {
		s.Notes = slices.Delete(s.Notes, 0, len(s.Notes)-maxNotes)
	}
}

// addBuild records a PR build; it reports whether the state changed (a resent or
// older build changes nothing).
func (s *State) addBuild(b PRBuild) bool {
	key := b.Origin.Key()
	if s.origin(key) == nil {
		s.Origins = append(s.Origins, Origin{OriginRef: b.Origin, State: originUnknown})
	}
	e := Entry{Component: b.Component, Origin: key, From: fromPullRequest, Build: b.Build}
	for i, old := range s.Entries {
		if old.Component != b.Component || old.Origin != key || old.From != fromPullRequest {
			continue
		}
		if old.BuildUID == b.BuildUID || b.BuiltAt.Before(old.BuiltAt) {
			return false
		}
		s.Entries[i] = e
		return true
	}
	s.Entries = append(s.Entries, e)
	return true
}

// addPush records the push build that replaces a merged origin's PR build.
func (s *State) addPush(e Entry) bool {
	for i, old := range s.Entries {
		if old.Component == e.Component && old.Origin == e.Origin && old.From == fromPush {
			if old.BuildUID == e.BuildUID {
				return false
			}
			s.Entries[i] = e
			return true
		}
	}
	s.Entries = append(s.Entries, e)
	return true
}

// Row is one component's digest in the target PR.
type Row struct {
	Component string `json:"component"`
	Image     string `json:"image"`
	Digest    string `json:"digest"`
	From      string `json:"from"`
	Origin    string `json:"origin"`
	// Dropped: its originating PR closed unmerged; the digest is not applied.
	Dropped bool `json:"dropped,omitempty"`
}

// Plan is what the target PR must be now.
type Plan struct {
	Rows []Row
	// Draft: keep (or open) the PR as a draft.
	Draft bool
	// Close: every originating PR closed unmerged.
	Close bool
	// WaitingPush are (component, origin key) pairs of merged origins whose push
	// build is not in yet.
	WaitingPush []Entry
	// Done: no originating PR is open any more (merged or closed).
	Done bool
}

// plan derives the target PR from the state (pure, deterministic).
func (s *State) plan() Plan {
	var p Plan
	anyOpen, anyMerged := false, false
	for _, o := range s.Origins {
		switch o.State {
		case originMerged:
			anyMerged = true
		case originClosed:
		default:
			anyOpen = true
		}
	}
	p.Done = !anyOpen
	var comps []string
	for _, e := range s.Entries {
		if !slices.Contains(comps, e.Component) {
			comps = append(comps, e.Component)
		}
	}
	slices.Sort(comps)
	for _, c := range comps {
		var best, push *Entry
		dropped := (*Entry)(nil)
		for i := range s.Entries {
			e := &s.Entries[i]
			if e.Component != c {
				continue
			}
			o := s.origin(e.Origin)
			switch {
			case o != nil && o.State == originClosed:
				dropped = e
			case e.From == fromPush:
				if push == nil || e.BuiltAt.After(push.BuiltAt) {
					push = e
				}
			case best == nil || e.BuiltAt.After(best.BuiltAt):
				best = e
			}
		}
		switch {
		case push != nil && (best == nil || s.origin(best.Origin).State == originMerged):
			p.Rows = append(p.Rows, Row{Component: c, Image: push.Image, Digest: push.Digest, From: fromPush, Origin: push.Origin})
		case best != nil:
			p.Rows = append(p.Rows, Row{Component: c, Image: best.Image, Digest: best.Digest, From: fromPullRequest, Origin: best.Origin})
			if o := s.origin(best.Origin); o != nil && o.State == originMerged {
				p.WaitingPush = append(p.WaitingPush, *best)
			}
		case dropped != nil:
			p.Rows = append(p.Rows, Row{Component: c, Image: dropped.Image, Digest: dropped.Digest, From: dropped.From, Origin: dropped.Origin, Dropped: true})
		}
	}
	p.Close = p.Done && !anyMerged && len(s.Origins) > 0
	p.Draft = !s.Released && (anyOpen || len(p.WaitingPush) > 0)
	return p
}

// applied are the rows whose digest the PR carries.
func (p Plan) applied() []Row {
	var out []Row
	for _, r := range p.Rows {
		if !r.Dropped {
			out = append(out, r)
		}
	}
	return out
}
