package changegrouppr

import (
	"context"

	"go.temporal.io/sdk/activity"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
)

// maxCINames bounds the report names carried into the workflow's history.
const maxCINames = 10

// ReadPullRequestCI reads the PR (its state, author and head) and what CI systems
// reported on the commit, classified by forge.ClassifyCI. It writes nothing.
func (a *Activities) ReadPullRequestCI(ctx context.Context, req changegroupprapi.CIRequest) (changegroupprapi.CIObserved, error) {
	if req.Known.Number <= 0 {
		return changegroupprapi.CIObserved{}, invalid("no pull request to read CI of")
	}
	f, secrets, err := a.connect(ctx, req.Repo, nil)
	if err != nil {
		return changegroupprapi.CIObserved{}, redact(err, secrets)
	}
	o, err := readCI(ctx, f, req)
	return o, redact(err, secrets)
}

func readCI(ctx context.Context, f forge.Forge, req changegroupprapi.CIRequest) (changegroupprapi.CIObserved, error) {
	pr, found, err := f.FindPR(ctx, "", req.Known.Number)
	if err != nil {
		return changegroupprapi.CIObserved{}, err
	}
	if !found {
		return changegroupprapi.CIObserved{SHA: req.SHA}, nil
	}
	o := changegroupprapi.CIObserved{SHA: req.SHA, Author: pr.Author, State: changegroupprapi.PROpen}
	switch {
	case pr.Merged:
		o.State = changegroupprapi.PRMerged
	case !pr.Open:
		o.State = changegroupprapi.PRClosed
	}
	if o.SHA == "" {
		o.SHA = pr.HeadSHA
	}
	if o.SHA == "" {
		return o, nil
	}
	reports, err := f.CIReports(ctx, o.SHA)
	if err != nil {
		return changegroupprapi.CIObserved{}, err
	}
	v := forge.ClassifyCI(reports)
	o.Started, o.AwaitingApproval, o.Detail = v.Started, v.AwaitingApproval, v.Detail
	o.Names = v.Names
	if len(o.Names) > maxCINames {
		o.Names = append(o.Names[:maxCINames:maxCINames], "…")
	}
	activity.GetLogger(ctx).Info("read the CI reports of the pull request", "pr", req.Known.Number, "sha", o.SHA,
		"reports", len(reports), "started", o.Started, "awaitingApproval", o.AwaitingApproval)
	return o, nil
}
