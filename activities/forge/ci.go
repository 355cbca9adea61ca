package forge

import (
	"sort"
	"strings"
)

// CIReport is one report a CI system left on a commit: a GitHub check run, a
// commit status (every forge), or a GitLab pipeline of GitLab CI's own. Pipelines
// as Code reports its pipelines as check runs (as a GitHub App) or commit statuses
// (with a token; GitLab and Gitea always).
type CIReport struct {
	// Kind is CICheckRun, CIStatus or CIPipeline.
	Kind string
	// Name is the check run's name, the status's context (GitLab: name) or the
	// pipeline's name.
	Name string
	// State is the forge's word: a check run's status (queued, in_progress,
	// completed) and conclusion after a slash; a status's state; a pipeline's status.
	State string
	// Title is a check run's output title or a status's description; Summary and
	// Text are a check run's output summary and text.
	Title, Summary, Text string
}

// Kinds of CIReport.
const (
	CICheckRun = "check-run"
	CIStatus   = "status"
	CIPipeline = "pipeline"
)

// What Pipelines as Code writes when it will not run CI for a pull request until
// someone trusted comments `/ok-to-test` (tektoncd/pipelines-as-code at 707a00d):
//   - the title of the check run, and the description of the commit status, on
//     every forge: "Pending approval, waiting for an /ok-to-test"
//     (pkg/pipelineascode/match.go verifyRepoAndUser; pkg/provider/github/status.go
//     pendingApproval); GitLab reports it with state "running", GitHub and Gitea
//     "pending", a check run is "queued";
//   - the text: "User <login> is not allowed to trigger CI via <event> in this
//     repo." (pkg/pipelineascode/errors.go checkAccessOrError);
//   - a GitHub check run's summary "<application> is waiting for approval."; PaC
//     itself recognises its waiting check run by a title holding "Pending" and a
//     summary holding "is waiting for approval" (status.go isPendingApprovalCheckrun).
//
// A skipped commit gets "CI Skipped" (pkg/adapter/sinker.go createSkipCIStatus),
// which is no pipeline either.
const (
	PaCPendingApprovalTitle = "Pending approval, waiting for an /ok-to-test"
	paCNotAllowed           = "is not allowed to trigger CI"
	paCWaitingSummary       = "is waiting for approval"
	paCSkipped              = "CI Skipped"
)

// CIVerdict is what the reports on one commit say about its pipelines.
type CIVerdict struct {
	// Started: a report other than a wait for approval or a skip is there: a
	// pipeline started (or another CI reported; any counts).
	Started bool
	// AwaitingApproval: Pipelines as Code says it waits for an `/ok-to-test`.
	AwaitingApproval bool
	// Names are the reports that count as started, sorted; Detail is PaC's text
	// for the wait (who is not allowed), or its title when it gave none.
	Names  []string
	Detail string
}

// ClassifyCI reads the reports on a commit the way Pipelines as Code writes them.
// A forge where nothing reported is neither started nor awaiting approval.
func ClassifyCI(reports []CIReport) CIVerdict {
	var v CIVerdict
	for _, r := range reports {
		switch {
		case awaitsApproval(r):
			v.AwaitingApproval = true
			if d := approvalDetail(r); d != "" && (v.Detail == "" || strings.Contains(d, paCNotAllowed)) {
				v.Detail = d
			}
		case strings.Contains(r.Title, paCSkipped) || strings.Contains(r.Summary, paCSkipped):
		default:
			v.Started = true
			v.Names = append(v.Names, r.Name)
		}
	}
	sort.Strings(v.Names)
	return v
}

func awaitsApproval(r CIReport) bool {
	for _, s := range []string{r.Title, r.Summary, r.Text} {
		if strings.Contains(s, PaCPendingApprovalTitle) || strings.Contains(s, paCNotAllowed) {
			return true
		}
	}
	return strings.Contains(r.Title, "Pending") && strings.Contains(r.Summary, paCWaitingSummary)
}

func approvalDetail(r CIReport) string {
	for _, s := range []string{r.Text, r.Summary, r.Title} {
		if strings.Contains(s, paCNotAllowed) {
			return Truncate(strings.TrimSpace(s))
		}
	}
	return Truncate(strings.TrimSpace(r.Title))
}
