// Package pac holds Pipelines as Code's rules, in one place for nudgeflow and for
// the forges it is tested against: which pull request events start a pipeline run
// on each forge, the skip marker that holds one back, whether the event's author
// may run CI (PaC's ACL), what an `/ok-to-test` comment does, and the words of the
// reports PaC leaves on a commit. nudgeflow holds CI with the marker and reads the
// reports (internal/forge ClassifyCI); the forge emulators and the Forgejo CI
// watcher count pipeline runs by the same rules. Everything here is read from
// tektoncd/pipelines-as-code at 707a00d (2026-08-19); each rule names its source.
package pac

import (
	"fmt"
	"regexp"
	"slices"
)

// skipMarker is PaC's regex (pkg/provider/provider.go): case-sensitive, lowercase,
// brackets required. PaC checks it on the head commit message only, never on the
// pull request's title or description.
var skipMarker = regexp.MustCompile(`\[(skip ci|ci skip|skip tkn|tkn skip)\]`)

// SkipMarker is the marker nudgeflow writes while it holds CI.
const SkipMarker = "[skip ci]"

// HasSkipMarker reports whether msg holds a skip marker.
func HasSkipMarker(msg string) bool { return skipMarker.MatchString(msg) }

// GitHubBuilds reports whether a GitHub pull_request action is one PaC runs
// pipelines on (pkg/provider/github/detect.go pullRequestOpenSyncEvent); edited,
// closed, converted_to_draft and the rest never are.
func GitHubBuilds(action string) bool {
	switch action {
	case "opened", "synchronize", "synchronized", "reopened", "ready_for_review":
		return true
	}
	return false
}

// GiteaBuilds reports whether a Gitea/Forgejo pull_request action is one PaC runs
// pipelines on (pkg/provider/gitea/detect.go): opened, synchronize(d) and reopened.
// edited (title, description, a lifted WIP prefix) never is, and nor is lifting a
// draft: Gitea has no ready_for_review. label_updated matches only on-label
// pipelines, which nudgeflow never triggers (it labels nothing).
func GiteaBuilds(action string) bool {
	switch action {
	case "opened", "synchronize", "synchronized", "reopened":
		return true
	}
	return false
}

// GitLabBuilds reports whether a GitLab Merge Request Hook action is one PaC runs
// pipelines on (pkg/provider/gitlab/detect.go): open, reopen, and update only with
// oldrev (new commits); an update without oldrev (title, description, draft) never.
func GitLabBuilds(action, oldrev string) bool {
	return action == "open" || action == "reopen" || (action == "update" && oldrev != "")
}

// ACL is who PaC trusts on one repository: the owner, collaborators, organisation
// members, users with push rights and people in the default branch's OWNERS file
// (pkg/provider/github/acl.go aclCheckAll, pkg/provider/gitlab/acl.go
// checkMembership), or the teams of a Repository CR's settings.policy, which take
// precedence (pkg/policy/policy.go). The emulators enforce it only on repositories
// a test restricts: on GitHub, PaC lets a same-repository pull request through
// whoever opened it (checkPullRequestForSameURL) unless a policy is set, so a
// restricted repository stands for one with a policy, for a fork, or for GitLab,
// where only membership counts.
type ACL struct {
	// Enforced: only Trusted may run CI; false trusts everyone (no restriction).
	Enforced bool     `json:"enforced,omitempty"`
	Trusted  []string `json:"trusted,omitempty"`
}

// Allows reports whether login may run CI.
func (a ACL) Allows(login string) bool {
	return !a.Enforced || slices.Contains(a.Trusted, login)
}

// Outcome is what PaC does with an event that would build.
type Outcome int

const (
	// nothing: the event is not one PaC builds on.
	nothing Outcome = iota
	// skipped: the head commit message holds a skip marker (pkg/adapter/sinker.go).
	skipped
	// Run: a pipeline run starts.
	Run
	// AwaitApproval: the author is not trusted; PaC reports "Pending approval, waiting
	// for an /ok-to-test" on the commit (pkg/pipelineascode/match.go verifyRepoAndUser).
	AwaitApproval
	// ignoredBot: the author is not trusted and is a GitHub Bot account; PaC sets no
	// status and says nothing (pkg/provider/github/status.go CreateStatus:
	// AccessDenied for a Bot sender returns early).
	ignoredBot
)

// Event is a pull request event that reached PaC.
type Event struct {
	// Builds: the provider's rule says this action builds (GitHubBuilds, GitLabBuilds).
	Builds bool
	// HeadMessage is the head commit's message.
	HeadMessage string
	// Sender is the login the ACL checks; SenderIsBot is GitHub's user type "Bot".
	Sender      string
	SenderIsBot bool
}

// Decide is PaC's answer to a pull request event: the skip marker first (the
// sinker's early check), then the ACL.
func Decide(ev Event, acl ACL) Outcome {
	switch {
	case !ev.Builds:
		return nothing
	case HasSkipMarker(ev.HeadMessage):
		return skipped
	case acl.Allows(ev.Sender):
		return Run
	case ev.SenderIsBot:
		return ignoredBot
	}
	return AwaitApproval
}

// okToTest is PaC's `/ok-to-test` comment with the default GitOps prefix "/"
// (pkg/opscomments/comments.go OkToTestRegex): alone on its line, optionally with a
// SHA.
var okToTest = regexp.MustCompile(`(^|\n)\s*/ok-to-test(?:\s+([a-fA-F0-9]{7,40}))?\s*(\r\n|\r|\n|$)`)

// IsOkToTest reports whether a comment is PaC's `/ok-to-test` command.
func IsOkToTest(comment string) bool { return okToTest.MatchString(comment) }

// OkToTestRuns reports whether an `/ok-to-test` comment starts a pipeline run: the
// commenter must be trusted, and PaC runs only when no run has already succeeded
// for the head SHA (docs/content/docs/guides/running-pipelines.md; pkg/matcher
// filters templates that already succeeded). The emulators' runs never fail, so
// any run for the SHA counts as a success. A GitOps comment overrides the skip
// marker (pkg/pipelineascode/pipelineascode.go).
func OkToTestRuns(comment string, acl ACL, commenter string, ranForSHA bool) bool {
	return IsOkToTest(comment) && acl.Allows(commenter) && !ranForSHA
}

// What PaC writes on a commit, with the default application name
// (pkg/params/settings/config.go PACApplicationNameDefaultValue).
const (
	ApplicationName = "Pipelines as Code CI"
	// PendingApprovalTitle is the check run title and the commit status
	// description of an event waiting for approval, on every forge
	// (pkg/pipelineascode/match.go, pkg/provider/github/status.go pendingApproval).
	PendingApprovalTitle = "Pending approval, waiting for an /ok-to-test"
	// StartedTitle is a running pipeline's title on GitHub and Gitea
	// (CreateStatus: Status in_progress).
	StartedTitle = "CI has Started"
	// SkippedTitle is the neutral report on a commit whose skip marker held CI
	// (pkg/adapter/sinker.go createSkipCIStatus): no pipeline ran.
	SkippedTitle = "CI Skipped"
	// NotAllowedPhrase is in every "not allowed" text (NotAllowedText).
	NotAllowedPhrase = "is not allowed to trigger CI"
	// WaitingForApprovalPhrase ends PendingApprovalSummary; PaC itself recognises
	// its waiting check run by a title holding "Pending" and a summary holding this
	// (pkg/provider/github/status.go isPendingApprovalCheckrun).
	WaitingForApprovalPhrase = "is waiting for approval"
)

// NotAllowedText is the text PaC gives the pending report: who may not trigger CI,
// and through which event (pkg/pipelineascode/errors.go checkAccessOrError).
func NotAllowedText(sender, trigger string) string {
	return fmt.Sprintf("User %s %s via %s in this repo.", sender, NotAllowedPhrase, trigger)
}

// PendingApprovalSummary is a GitHub check run's summary for the wait
// (pkg/provider/github/status.go CreateStatus, ConclusionPending with a title).
const PendingApprovalSummary = ApplicationName + " " + WaitingForApprovalPhrase + "."

// RunName is the name of the check run or status context of a pipeline run: the
// application name, then the PipelineRun's name (pkg/provider/provider.go GetCheckName).
func RunName(pipelineRun string) string { return ApplicationName + " / " + pipelineRun }

// PipelineRun is the name the emulators give the one PipelineRun a pull request
// event runs (Konflux's convention: <component>-on-pull-request).
func PipelineRun(repo string) string { return repo + "-on-pull-request" }
