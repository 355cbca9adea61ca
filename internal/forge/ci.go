package forge

import (
	"sort"
	"strings"

	"github.com/nudgeflow/nudgeflow/internal/pac"
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

// ClassifyCI reads the reports on a commit the way Pipelines as Code writes them
// (package pac has its words). When it will not run CI for a pull request until
// someone trusted comments `/ok-to-test`, PaC titles the check run, or describes the
// commit status, pac.PendingApprovalTitle on every forge (GitLab with state
// "running", GitHub and Gitea "pending", a check run "queued"), its text says who
// is not allowed, and a GitHub check run's summary says it is waiting for approval.
// A skipped commit's pac.SkippedTitle is no pipeline either. A forge where nothing
// reported is neither started nor awaiting approval.
func ClassifyCI(reports []CIReport) CIVerdict {
	var v CIVerdict
	for _, r := range reports {
		switch {
		case awaitsApproval(r):
			v.AwaitingApproval = true
			if d := approvalDetail(r); d != "" && (v.Detail == "" || strings.Contains(d, pac.NotAllowedPhrase)) {
				v.Detail = d
			}
		case strings.Contains(r.Title, pac.SkippedTitle) || strings.Contains(r.Summary, pac.SkippedTitle):
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
		if strings.Contains(s, pac.PendingApprovalTitle) || strings.Contains(s, pac.NotAllowedPhrase) {
			return true
		}
	}
	return strings.Contains(r.Title, "Pending") && strings.Contains(r.Summary, pac.WaitingForApprovalPhrase)
}

func approvalDetail(r CIReport) string {
	for _, s := range []string{r.Text, r.Summary, r.Title} {
		if strings.Contains(s, pac.NotAllowedPhrase) {
			return Truncate(strings.TrimSpace(s))
		}
	}
	return Truncate(strings.TrimSpace(r.Title))
}
