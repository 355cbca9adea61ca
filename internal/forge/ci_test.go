package forge_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/internal/forge"
)

// ClassifyCI reads Pipelines as Code's reports as PaC writes them (verbatim from
// tektoncd/pipelines-as-code at 707a00d) on each forge.
func TestClassifyCI(t *testing.T) {
	const notAllowed = "User nudgeflow is not allowed to trigger CI via pull_request in this repo."
	waitingCheck := forge.CIReport{Kind: forge.CICheckRun, Name: "Pipelines as Code CI", State: "queued",
		Title: "Pending approval, waiting for an /ok-to-test", Summary: "Pipelines as Code CI is waiting for approval.", Text: notAllowed}
	for _, tc := range []struct {
		name    string
		reports []forge.CIReport
		want    forge.CIVerdict
	}{
		{"nothing reported", nil, forge.CIVerdict{}},
		{"GitHub App: the queued check run", []forge.CIReport{waitingCheck},
			forge.CIVerdict{AwaitingApproval: true, Detail: notAllowed}},
		{"GitHub or Gitea with a token: the pending status", []forge.CIReport{{Kind: forge.CIStatus, Name: "Pipelines as Code CI",
			State: "pending", Title: "Pending approval, waiting for an /ok-to-test"}},
			forge.CIVerdict{AwaitingApproval: true, Detail: "Pending approval, waiting for an /ok-to-test"}},
		{"GitLab: the running status", []forge.CIReport{{Kind: forge.CIStatus, Name: "Pipelines as Code CI",
			State: "running", Title: "Pending approval, waiting for an /ok-to-test"}},
			forge.CIVerdict{AwaitingApproval: true, Detail: "Pending approval, waiting for an /ok-to-test"}},
		{"PaC's own rule for its waiting check run", []forge.CIReport{{Kind: forge.CICheckRun, Name: "Red Hat Konflux",
			Title: "Pending", Summary: "Red Hat Konflux is waiting for approval."}},
			forge.CIVerdict{AwaitingApproval: true, Detail: "Pending"}},
		{"a running pipeline", []forge.CIReport{{Kind: forge.CIStatus, Name: "Pipelines as Code CI / bundle-on-pull-request",
			State: "pending", Title: "CI has Started"}},
			forge.CIVerdict{Started: true, Names: []string{"Pipelines as Code CI / bundle-on-pull-request"}}},
		{"approved: the wait is replaced and the run reports", []forge.CIReport{
			{Kind: forge.CIStatus, Name: "Pipelines as Code CI", State: "success", Title: "Approved"},
			{Kind: forge.CIStatus, Name: "Pipelines as Code CI / b-on-pull-request", State: "pending", Title: "CI has Started"}},
			forge.CIVerdict{Started: true, Names: []string{"Pipelines as Code CI", "Pipelines as Code CI / b-on-pull-request"}}},
		{"a skipped commit starts nothing", []forge.CIReport{{Kind: forge.CICheckRun, Name: "Pipelines as Code CI",
			State: "completed/skipped", Title: "CI Skipped", Summary: "Pipelines as Code CI - CI has been skipped"}},
			forge.CIVerdict{}},
		{"a GitLab CI pipeline of its own", []forge.CIReport{{Kind: forge.CIPipeline, Name: "pipeline #7 (merge_request_event)", State: "created"}},
			forge.CIVerdict{Started: true, Names: []string{"pipeline #7 (merge_request_event)"}}},
		{"another CI beside a wait counts as started, and the wait is still told", []forge.CIReport{waitingCheck,
			{Kind: forge.CIStatus, Name: "lint", State: "success"}},
			forge.CIVerdict{Started: true, AwaitingApproval: true, Names: []string{"lint"}, Detail: notAllowed}},
	} {
		require.Equal(t, tc.want, forge.ClassifyCI(tc.reports), tc.name)
	}
}
