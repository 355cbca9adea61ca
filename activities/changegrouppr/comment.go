package changegrouppr

import (
	"context"
	"regexp"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
)

var commentKey = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// CommentOnPullRequest posts the comment unless the PR already holds one with the
// same key, and only on an open PR: it looks before it writes, so a retry or a
// second call posts nothing.
func (a *Activities) CommentOnPullRequest(ctx context.Context, req changegroupprapi.CommentRequest) (changegroupprapi.CommentResult, error) {
	if req.Known.Number <= 0 || !commentKey.MatchString(req.Key) || req.Body == "" {
		return changegroupprapi.CommentResult{}, invalid("a comment needs a pull request, a key of [a-z0-9-] and a body (key %q)", req.Key)
	}
	f, secrets, err := a.connect(ctx, req.Repo, nil)
	if err != nil {
		return changegroupprapi.CommentResult{}, redact(err, secrets)
	}
	res, err := comment(ctx, f, req)
	res.Writes = f.Writes()
	return res, redact(err, secrets)
}

func comment(ctx context.Context, f forge.Forge, req changegroupprapi.CommentRequest) (changegroupprapi.CommentResult, error) {
	pr, found, err := f.FindPR(ctx, "", req.Known.Number)
	if err != nil || !found || !pr.Open {
		return changegroupprapi.CommentResult{}, err
	}
	marker := changegroupprapi.CommentMarker(req.Key)
	posted, err := ensureCommentPosted(ctx, f, pr.Number, marker, req.Body)
	if err == nil && posted {
		activity.GetLogger(ctx).Info("commented on the pull request", "pr", pr.Number, "key", req.Key)
	}
	return changegroupprapi.CommentResult{Posted: posted}, err
}

// ensureComment posts marker+"\n"+text unless a comment already holds marker.
func ensureComment(ctx context.Context, f forge.Forge, number int, marker, text string) error {
	_, err := ensureCommentPosted(ctx, f, number, marker, text)
	return err
}

// ensureCommentPosted is ensureComment, and says whether it posted.
func ensureCommentPosted(ctx context.Context, f forge.Forge, number int, marker, text string) (bool, error) {
	cs, err := f.Comments(ctx, number)
	if err != nil {
		return false, err
	}
	for _, c := range cs {
		if strings.Contains(c.Body, marker) {
			return false, nil
		}
	}
	if err := f.CreateComment(ctx, number, marker+"\n"+text); err != nil {
		return false, err
	}
	return true, nil
}
