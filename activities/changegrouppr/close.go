package changegrouppr

import (
	"context"

	"go.temporal.io/sdk/activity"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
)

const closeMarker = "<!-- nudgeflow:closed -->"

// ClosePullRequest comments (once) and closes the PR; a closed or merged PR is left alone.
func (a *Activities) ClosePullRequest(ctx context.Context, req changegroupprapi.CloseRequest) (changegroupprapi.Observed, error) {
	f, secrets, err := a.connect(ctx, req.Repo, nil)
	if err != nil {
		return changegroupprapi.Observed{}, redact(err, secrets)
	}
	o, err := a.close(ctx, f, req)
	o.Writes = f.Writes()
	return o, redact(err, secrets)
}

func (a *Activities) close(ctx context.Context, f forge.Forge, req changegroupprapi.CloseRequest) (changegroupprapi.Observed, error) {
	if req.Known.Number <= 0 {
		return changegroupprapi.Observed{PR: req.Known}, nil // no PR was ever opened
	}
	st, err := a.read(ctx, f, "", req.Known.Number)
	if err != nil || !st.found || !st.pr.Open {
		return observed(f, st, req.Known, false), err
	}
	if req.Comment != "" {
		if err := ensureComment(ctx, f, st.pr.Number, closeMarker, req.Comment); err != nil {
			return changegroupprapi.Observed{}, err
		}
	}
	if _, err := f.EditPR(ctx, st.pr.Number, nil, new(false)); err != nil {
		return changegroupprapi.Observed{}, err
	}
	activity.GetLogger(ctx).Info("closed pull request", "pr", st.pr.Number)
	st, err = a.read(ctx, f, "", req.Known.Number)
	return observed(f, st, req.Known, false), err
}
