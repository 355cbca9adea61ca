package changegroup

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	changegroupcr "github.com/nudgeflow/nudgeflow/contracts/changegroupcrapi"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	handback "github.com/nudgeflow/nudgeflow/contracts/handbackapi"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// Component is one nudging component's progress inside the workflow.
type Component struct {
	Name     string                           `json:"name"`
	Original string                           `json:"original,omitempty"`
	New      string                           `json:"new,omitempty"`
	State    appstudiov1alpha1.ComponentState `json:"state"`
	// UpdatedAt is when New changed (workflow time).
	UpdatedAt   time.Time `json:"updatedAt,omitempty"`
	PipelineRun string    `json:"pipelineRun,omitempty"`
	// Build is the build of New, whole as the group received it (collect). Its
	// Image is the member's image repository: the Component's until a build is
	// collected, then the build's. Its Digest repeats New, the name states always
	// gave it (states written before Build was embedded have only New).
	imagebuild.Build
	// Pushed is the digest of this component in the PR's head as nudgeflow last
	// pushed it: what a merge delivers.
	Pushed string `json:"pushed,omitempty"`
	// HandedBack is the newest digest handed back to normal nudging.
	HandedBack string `json:"handedBack,omitempty"`
	// References are the repositories the nudged component's files reference this
	// component by, as the last sync that searched them found; NotReferenced is set
	// when it found none.
	References    []string `json:"references,omitempty"`
	NotReferenced bool     `json:"notReferenced,omitempty"`
}

// State is the whole truth of a ChangeGroup, carried through continue-as-new.
type State struct {
	Phase          appstudiov1alpha1.ChangeGroupPhase `json:"phase"`
	Reason         string                             `json:"reason,omitempty"`
	Message        string                             `json:"message,omitempty"`
	StartTime      time.Time                          `json:"startTime"`
	ReadyTime      time.Time                          `json:"readyTime,omitempty"`
	CompletionTime time.Time                          `json:"completionTime,omitempty"`
	// Deadline is absolute so it survives continue-as-new; zero means no timeout.
	Deadline time.Time `json:"deadline,omitempty"`
	// SpecGeneration is the newest spec applied (spec signals are resent on resync).
	SpecGeneration int64 `json:"specGeneration,omitempty"`

	NudgedComponent string                `json:"nudgedComponent"`
	Repo            changegroupprapi.Repo `json:"repo"`
	FileMatch       []string              `json:"fileMatch"`
	Components      []Component           `json:"components"`

	PR changegroupprapi.PRRef `json:"pr"`
	// Released: CI was released (all ready, or a person asked for it).
	Released bool `json:"released,omitempty"`
	// ReleaseRequested: a person asked to stop waiting.
	ReleaseRequested bool `json:"releaseRequested,omitempty"`
	// HumanEdits: automated pushes are paused until a rebase is requested.
	HumanEdits bool `json:"humanEdits,omitempty"`
	// HumanEditsExplained: a sync has posted the comment that says how to resume.
	HumanEditsExplained bool `json:"humanEditsExplained,omitempty"`
	// Overwrite: the next sync discards human edits (rebase).
	Overwrite bool `json:"overwrite,omitempty"`
	// Dirty: the PR is behind the state; LastChange drives the debounce.
	Dirty      bool      `json:"dirty,omitempty"`
	LastChange time.Time `json:"lastChange,omitempty"`
	// ObserveRequested: a PR event asks for a fresh look at the PR.
	ObserveRequested bool `json:"observeRequested,omitempty"`
	// StatusStale: the CR status is behind the state.
	StatusStale bool `json:"statusStale,omitempty"`

	// Seen deduplicates builds ("component@digest") and webhook deliveries.
	Seen           map[string]bool `json:"seen,omitempty"`
	SeenDeliveries []string        `json:"seenDeliveries,omitempty"`
	// ForgeWrites counts forge write calls, for reports.
	ForgeWrites int `json:"forgeWrites"`
	// PendingComponents are spec additions still to be resolved.
	PendingComponents []string `json:"pendingComponents,omitempty"`

	// Branch is the PR's head branch, unique per group (namespace and UID); empty in
	// groups started before it existed, which keep BranchPrefix + name.
	Branch string `json:"branch,omitempty"`
	// HandBack are held builds not delivered, waiting for the hand-back activity.
	HandBack []handback.Build `json:"handBack,omitempty"`
	// HandedBackCount counts builds handed back to normal nudging.
	HandedBackCount int `json:"handedBackCount,omitempty"`
	// Revision counts changes that need a push; OverwriteRevision counts rebase
	// requests. A sync clears Dirty and Overwrite only when neither moved while it
	// ran, so an override that arrives during a sync is never lost.
	Revision          int64 `json:"revision,omitempty"`
	OverwriteRevision int64 `json:"overwriteRevision,omitempty"`
	// PRHead is the PR branch's head as last observed; OverwriteHead is the head a
	// rebase request authorised discarding (commits pushed later are kept).
	PRHead        string `json:"prHead,omitempty"`
	OverwriteHead string `json:"overwriteHead,omitempty"`
	// ForgeFailingSince is when forge calls started failing (zero: they work).
	ForgeFailingSince time.Time `json:"forgeFailingSince,omitempty"`

	// AutoRelease is the spec's autoRelease (batching); nil: only all ready or a
	// person releases. Automatic: nudgeflow opened the group for a NudgeConfig
	// batching policy; once released it collects nothing more (later builds are
	// handed back, and the bridge opens the next batch for them).
	AutoRelease *AutoRelease `json:"autoRelease,omitempty"`
	Automatic   bool         `json:"automatic,omitempty"`
	// LastBuildAt is when the group last collected a build (the window's start);
	// AutoReleased says why the workflow released on its own.
	LastBuildAt  time.Time `json:"lastBuildAt,omitempty"`
	AutoReleased string    `json:"autoReleased,omitempty"`

	// CI follows the pipeline the release should have started (groups released in
	// the versionCIStart shape); nil before the release.
	CI *CIWatch `json:"ci,omitempty"`

	// Unverified are builds received and not verified yet (versionVerifyBuilds):
	// the cluster could not be read; they are verified before anything else.
	Unverified []ComponentBuilt `json:"unverified,omitempty"`
	// Verdicts are the verdicts on the builds that entered the group, by
	// "component@digest" (the Seen key): a verified build is never verified again,
	// so a build whose run was pruned later stays kept; a refused one was written
	// nowhere. Pruned with Seen.
	Verdicts map[string]buildcheck.Verdict `json:"verdicts,omitempty"`
	// RefusedCount counts the builds refused; Refused are the latest of them
	// ("component@digest", at most maxRefused), for the status.
	RefusedCount int      `json:"refusedCount,omitempty"`
	Refused      []string `json:"refused,omitempty"`
}

const maxSeenDeliveries = 200

// maxSeenBuilds bounds the build dedupe set carried through continue-as-new.
const maxSeenBuilds = 500

func newState(now time.Time, r changegroupcr.Resolved, timeout time.Duration) *State {
	s := &State{
		Phase:           appstudiov1alpha1.PhaseInitialized,
		StartTime:       now,
		NudgedComponent: r.NudgedComponent,
		Repo:            r.Repo,
		FileMatch:       r.FileMatch,
		Seen:            map[string]bool{},
		StatusStale:     true,
	}
	if timeout > 0 {
		s.Deadline = now.Add(timeout)
	}
	s.addComponents(r.Components, false)
	return s
}

func (s *State) component(name string) *Component {
	for i := range s.Components {
		if s.Components[i].Name == name {
			return &s.Components[i]
		}
	}
	return nil
}

func (s *State) addComponents(rs []changegroupcr.ResolvedComponent, nothingLost bool) {
	for _, r := range rs {
		if c := s.component(r.Name); c != nil && nothingLost {
			// Added by the spec signal already; resolution fills the image and the
			// original digest while it waits.
			if c.State == appstudiov1alpha1.ComponentDropped {
				c.rejoin()
			}
			if c.Image == "" {
				c.Image = r.Image
			}
			if c.New == "" {
				c.Original = r.Original
			}
			continue
		}
		if c := s.component(r.Name); c != nil {
			if c.State == appstudiov1alpha1.ComponentDropped {
				c.State = appstudiov1alpha1.ComponentWaiting
				if c.New != "" {
					c.State = appstudiov1alpha1.ComponentReady
				}
			}
			continue
		}
		s.Components = append(s.Components, Component{
			Name: r.Name, Build: imagebuild.Build{Image: r.Image}, Original: r.Original, State: appstudiov1alpha1.ComponentWaiting,
		})
	}
	sort.Slice(s.Components, func(i, j int) bool { return s.Components[i].Name < s.Components[j].Name })
}

// normalize restores what JSON drops: an empty Seen map round-trips through
// continue-as-new as nil.
func (s *State) normalize() {
	if s.Seen == nil {
		s.Seen = map[string]bool{}
	}
}

// pruneSeen bounds the build dedupe set before it is carried to the next run:
// beyond maxSeenBuilds it keeps only each component's current, pushed and handed
// back digests. A forgotten build that is redelivered later changes nothing: a
// member's is older than its current build (builds are ordered by build time), and
// a handed-back one asks for the same Nudge again, which its workflow ID (the
// build's, with a reuse policy that rejects a duplicate) makes a no-op; only the
// status's hand-back count may count it twice.
func (s *State) pruneSeen() {
	if len(s.Seen) <= maxSeenBuilds {
		return
	}
	keep := map[string]bool{}
	for _, c := range s.Components {
		for _, d := range []string{c.New, c.Pushed, c.HandedBack} {
			if key := c.Name + "@" + d; d != "" && s.Seen[key] {
				keep[key] = true
			}
		}
	}
	s.Seen = keep
	if s.Verdicts == nil {
		return
	}
	// The verdicts of the builds kept (walking the members, never the map: the
	// workflow's code must not depend on a map's order).
	verdicts := map[string]buildcheck.Verdict{}
	for _, c := range s.Components {
		for _, d := range []string{c.New, c.Pushed, c.HandedBack} {
			if v, ok := s.Verdicts[c.Name+"@"+d]; ok && d != "" {
				verdicts[c.Name+"@"+d] = v
			}
		}
	}
	s.Verdicts = verdicts
}

// queueUnverified queues a received build for verification: a build seen before
// (kept, handed back or refused) or already queued is not verified again.
func (s *State) queueUnverified(b ComponentBuilt) bool {
	key := b.Component + "@" + b.Digest
	if s.Seen[key] || slices.ContainsFunc(s.Unverified, func(q ComponentBuilt) bool { return q.Component+"@"+q.Digest == key }) {
		return false
	}
	s.Unverified = append(s.Unverified, b)
	return true
}

// verdict records the verdict on a queued build. A refused build is marked seen,
// so a redelivery is not verified again, and is written nowhere.
func (s *State) verdict(b ComponentBuilt, v buildcheck.Verdict) {
	if s.Verdicts == nil {
		s.Verdicts = map[string]buildcheck.Verdict{}
	}
	key := b.Component + "@" + b.Digest
	s.Verdicts[key] = v
	if !v.Verified {
		s.Seen[key] = true
		s.RefusedCount++
		s.Refused = append(s.Refused, key)
		if len(s.Refused) > maxRefused {
			s.Refused = s.Refused[len(s.Refused)-maxRefused:]
		}
		s.StatusStale = true
	}
}

// maxRefused bounds State.Refused.
const maxRefused = 3

// carriedBuilds are the builds a state holds, as signals would have brought them:
// what an untrusted state (Workflow) is allowed to keep, once verified.
func (s *State) carriedBuilds() []ComponentBuilt {
	var out []ComponentBuilt
	for _, c := range s.Components {
		if c.New != "" {
			out = append(out, c.built())
		}
	}
	return append(out, s.Unverified...)
}

// applyBuild records a build; it reports whether the state changed. Older builds
// never replace newer ones, and a redelivered build changes nothing. With
// handBack (the nothing-lost shape) a build the group will not collect — not a
// member, dropped, or arriving after the group stopped collecting — is handed back
// to normal nudging instead of being discarded.
func (s *State) applyBuild(now time.Time, b ComponentBuilt, handBack bool) (bool, string) {
	key := b.Component + "@" + b.Digest
	if s.Seen[key] {
		return false, "duplicate"
	}
	c := s.component(b.Component)
	var refuse string
	switch {
	case handBack && s.Phase.IsFinal():
		refuse = "arrived after the group ended (" + string(s.Phase) + ")"
	case c == nil:
		refuse = "not a member of this group"
	case c.State == appstudiov1alpha1.ComponentDropped:
		refuse = "dropped from this group"
	case handBack && s.Automatic && s.Released:
		refuse = "arrived after the batch was released; the next batch takes it"
	}
	if refuse != "" {
		if handBack {
			s.Seen[key] = true
			hb := heldBuild(b, refuse)
			// A build after an automatic group stopped collecting (released or
			// merged) belongs to the target's next batch.
			hb.Next = s.Automatic && (s.Released || s.Phase == appstudiov1alpha1.PhaseCompleted)
			s.queueHandBack(hb)
			return true, refuse + "; handed back to normal nudging"
		}
		return false, refuse
	}
	if c.New != "" && b.BuiltAt.Before(c.BuiltAt) {
		s.Seen[key] = true
		return false, "older than " + c.New
	}
	s.Seen[key] = true
	c.collect(b, now)
	c.State = appstudiov1alpha1.ComponentReady
	s.LastBuildAt = now
	s.markDirty(now)
	return true, ""
}

func (s *State) markDirty(now time.Time) {
	s.Dirty = true
	s.LastChange = now
	s.StatusStale = true
	s.Revision++
}

// collect makes b the component's build, whole: the member's image repository is
// the build's (the one its digest was pushed to).
func (c *Component) collect(b ComponentBuilt, now time.Time) {
	member := c.Image
	c.Build, c.New, c.PipelineRun, c.UpdatedAt = b.Build, b.Digest, b.PipelineRun, now
	if c.Image == "" {
		// Signalled without its image (before builds were carried whole): its
		// pull spec's, else the member's.
		c.Image = cmp.Or(konflux.CompleteLegacy(b.Build, nil).Image, member)
	}
}

// built is the component's build as a signal brings it.
func (c *Component) built() ComponentBuilt {
	b := ComponentBuilt{Component: c.Name, Build: c.Build, PipelineRun: c.PipelineRun}
	b.Digest = c.New
	return b
}

func heldBuild(b ComponentBuilt, why string) handback.Build {
	return handback.Build{Component: b.Component, Build: b.Build, Why: why}
}

// queueHandBack adds a build to the hand-back list (once per component and digest).
func (s *State) queueHandBack(b handback.Build) {
	for _, q := range s.HandBack {
		if q.Component == b.Component && q.Digest == b.Digest {
			return
		}
	}
	s.HandBack = append(s.HandBack, b)
	s.HandedBackCount++
	if c := s.component(b.Component); c != nil {
		c.HandedBack = b.Digest
	}
	s.StatusStale = true
}

// handBackCollected hands back the component's collected build unless it was
// handed back already.
func (s *State) handBackCollected(c *Component, why string) {
	if c.New == "" || c.HandedBack == c.New {
		return
	}
	s.queueHandBack(heldBuild(c.built(), why))
}

// handBackUndelivered runs when the group has ended: every collected build that
// is not in a merged PR goes back to normal nudging.
func (s *State) handBackUndelivered() {
	for i := range s.Components {
		c := &s.Components[i]
		if c.State == appstudiov1alpha1.ComponentDropped || c.New == "" {
			continue
		}
		if s.Phase == appstudiov1alpha1.PhaseCompleted && c.Pushed == c.New {
			continue // delivered: the merged PR carries it
		}
		why := fmt.Sprintf("the group ended (%s: %s) without it in a merged pull request", s.Phase, s.Reason)
		s.handBackCollected(c, why)
		if s.Automatic && s.Phase == appstudiov1alpha1.PhaseCompleted && len(s.HandBack) > 0 {
			// Arrived after the batch's last push: the next batch takes it.
			if last := &s.HandBack[len(s.HandBack)-1]; last.Component == c.Name && last.Digest == c.New {
				last.Next = true
			}
		}
	}
}

// drop stops waiting for a component; its collected digest, if any, leaves the PR
// and, with handBack, goes back to normal nudging.
func (s *State) drop(now time.Time, name string, handBack bool) bool {
	c := s.component(name)
	if c == nil || c.State == appstudiov1alpha1.ComponentDropped {
		return false
	}
	c.State = appstudiov1alpha1.ComponentDropped
	if handBack {
		s.handBackCollected(c, "dropped from the group")
	}
	s.markDirty(now)
	return true
}

// rejoin makes a dropped component a member again, waiting for its next build:
// the digest it had before it left was handed back, never reused.
func (c *Component) rejoin() {
	c.State = appstudiov1alpha1.ComponentWaiting
	c.New, c.PipelineRun, c.UpdatedAt = "", "", time.Time{}
	c.Build = imagebuild.Build{Image: c.Image}
}

// applySpec reconciles the member list with the CR's spec; new members wait for
// resolution by an activity, removed ones are dropped. With nothingLost a new or
// re-added member is a member at once (its builds are collected while it is being
// resolved) and starts Waiting, and a removed member's build is handed back.
func (s *State) applySpec(now time.Time, sc SpecChanged, nothingLost bool) bool {
	if sc.Generation != 0 && sc.Generation <= s.SpecGeneration {
		return false
	}
	s.SpecGeneration = sc.Generation
	want := map[string]bool{}
	for _, n := range sc.NudgingComponents {
		want[n] = true
		c := s.component(n)
		if c != nil && c.State != appstudiov1alpha1.ComponentDropped {
			continue
		}
		s.PendingComponents = appendUnique(s.PendingComponents, n)
		if !nothingLost {
			continue
		}
		if c == nil {
			s.Components = append(s.Components, Component{Name: n, State: appstudiov1alpha1.ComponentWaiting})
			sort.Slice(s.Components, func(i, j int) bool { return s.Components[i].Name < s.Components[j].Name })
		} else {
			c.rejoin()
		}
		s.markDirty(now)
	}
	for i := range s.Components {
		if c := &s.Components[i]; !want[c.Name] && c.State != appstudiov1alpha1.ComponentDropped && len(want) > 0 {
			s.drop(now, c.Name, nothingLost)
		}
	}
	s.AutoRelease = sc.AutoRelease
	if sc.Timeout > 0 {
		s.Deadline = s.StartTime.Add(sc.Timeout)
	} else {
		s.Deadline = time.Time{}
	}
	s.StatusStale = true
	return true
}

func (s *State) seenDelivery(id string) bool {
	if id == "" {
		return false
	}
	for _, d := range s.SeenDeliveries {
		if d == id {
			return true
		}
	}
	s.SeenDeliveries = append(s.SeenDeliveries, id)
	if len(s.SeenDeliveries) > maxSeenDeliveries {
		s.SeenDeliveries = s.SeenDeliveries[len(s.SeenDeliveries)-maxSeenDeliveries:]
	}
	return false
}

// counts returns ready and awaited (not dropped) components.
func (s *State) counts() (ready, total int) {
	for _, c := range s.Components {
		if c.State == appstudiov1alpha1.ComponentDropped {
			continue
		}
		total++
		if c.State == appstudiov1alpha1.ComponentReady {
			ready++
		}
	}
	return ready, total
}

func (s *State) allReady() bool {
	ready, total := s.counts()
	return total > 0 && ready == total && len(s.PendingComponents) == 0
}

func (s *State) waitingFor() []string {
	var names []string
	for _, c := range s.Components {
		if c.State == appstudiov1alpha1.ComponentWaiting {
			names = append(names, c.Name)
		}
	}
	return append(names, s.PendingComponents...)
}

func (s *State) finish(now time.Time, phase appstudiov1alpha1.ChangeGroupPhase, reason, message string) {
	if s.Phase.IsFinal() {
		return
	}
	s.Phase, s.Reason, s.Message, s.CompletionTime = phase, reason, message, now
	s.StatusStale = true
}

// rows are the PR's status table.
func (s *State) rows() []changegroupprapi.Row {
	rows := make([]changegroupprapi.Row, 0, len(s.Components))
	for _, c := range s.Components {
		rows = append(rows, changegroupprapi.Row{
			Component: c.Name, Image: c.Image, Current: c.Original, New: c.New,
			State: string(c.State), UpdatedAt: c.UpdatedAt,
		})
	}
	return rows
}

// applyReferences records where the last file search found each component
// referenced; the status shows it (a change is a status change).
func (s *State) applyReferences(refs []changegroupprapi.RowReferences) {
	for _, ref := range refs {
		c := s.component(ref.Component)
		if c == nil {
			continue
		}
		notReferenced := len(ref.Repositories) == 0
		if c.NotReferenced != notReferenced || !slices.Equal(c.References, ref.Repositories) {
			c.References, c.NotReferenced = ref.Repositories, notReferenced
			s.StatusStale = true
		}
	}
}

func appendUnique(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}
