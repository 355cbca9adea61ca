package pullrequest

import (
	"context"

	"go.temporal.io/sdk/activity"

	"github.com/nudgeflow/nudgeflow/activities/forge"
)

// CIRequest asks what CI reported on one commit of the PR (after the release:
// the head nudgeflow pushed without the skip marker).
type CIRequest struct {
	Repo  Repo  `json:"repo"`
	Known PRRef `json:"known"`
	// SHA is the commit to read; empty reads the PR's head.
	SHA string `json:"sha,omitempty"`
}

// CIObserved is what the forge says about the commit's pipelines.
type CIObserved struct {
	// SHA is the commit read; State the PR's state; Author the login that opened
	// the PR (whom Pipelines as Code's ACL checks).
	SHA    string  `json:"sha"`
	State  PRState `json:"state"`
	Author string  `json:"author,omitempty"`
	// Started: a pipeline (or another CI) reported on the commit; Names are the
	// reports, at most maxCINames.
	Started bool     `json:"started,omitempty"`
	Names   []string `json:"names,omitempty"`
	// AwaitingApproval: Pipelines as Code waits for an `/ok-to-test`; Detail is its
	// text (who is not allowed to trigger CI).
	AwaitingApproval bool   `json:"awaitingApproval,omitempty"`
	Detail           string `json:"detail,omitempty"`
}

// maxCINames bounds the report names carried into the workflow's history.
const maxCINames = 10

// ReadPullRequestCI reads the PR (its state, author and head) and what CI systems
// reported on the commit, classified by forge.ClassifyCI. It writes nothing.
func (a *Activities) ReadPullRequestCI(ctx context.Context, req CIRequest) (CIObserved, error) {
	if req.Known.Number <= 0 {
		return CIObserved{}, invalid("no pull request to read CI of")
	}
	f, secrets, err := a.connect(ctx, req.Repo, nil)
	if err != nil {
		return CIObserved{}, redact(err, secrets)
	}
	o, err := readCI(ctx, f, req)
	return o, redact(err, secrets)
}

func readCI(ctx context.Context, f forge.Forge, req CIRequest) (CIObserved, error) {
	pr, found, err := f.FindPR(ctx, "", req.Known.Number)
	if err != nil {
		return CIObserved{}, err
	}
	if !found {
		return CIObserved{SHA: req.SHA}, nil
	}
	o := CIObserved{SHA: req.SHA, Author: pr.Author, State: PROpen}
	switch {
	case pr.Merged:
		o.State = PRMerged
	case !pr.Open:
		o.State = PRClosed
	}
	if o.SHA == "" {
		o.SHA = pr.HeadSHA
	}
	if o.SHA == "" {
		return o, nil
	}
	reports, err := f.CIReports(ctx, o.SHA)
	if err != nil {
		return CIObserved{}, err
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
