package github

import (
	"context"
	"fmt"
	"net/http"

	gh "github.com/google/go-github/v92/github"

	"github.com/nudgeflow/nudgeflow/internal/forge"
)

var (
	_ forge.TitleEditor  = (*Client)(nil)
	_ forge.Labeler      = (*Client)(nil)
	_ forge.BotCommitter = (*Client)(nil)
)

// WebCommitter is the committer GitHub records on a commit made through its API
// that names none (a platform-native commit).
var WebCommitter = forge.Signature{Name: "GitHub", Email: "noreply@github.com"}

// BotCommitter is GitHub's own committer for native commits (zero otherwise: a
// commit names its committer, the bot).
func (c *Client) BotCommitter() forge.Signature {
	if c.native {
		return WebCommitter
	}
	return forge.Signature{}
}

// EditTitle sets the title and, with body, the description: one PATCH.
func (c *Client) EditTitle(ctx context.Context, number int, title string, body *string) (forge.PR, error) {
	p, resp, err := c.rest.PullRequests.Edit(ctx, c.repo.Owner, c.repo.Name, number, &gh.PullRequest{Title: &title, Body: body})
	if err != nil {
		return forge.PR{}, classify(fmt.Sprintf("editing PR #%d", number), err, resp, nil)
	}
	return toPR(p), nil
}

// AddLabels adds labels by name (GitHub creates the ones the repository lacks),
// as Renovate's GitHub platform does after opening a PR.
func (c *Client) AddLabels(ctx context.Context, number int, names []string) error {
	if len(names) == 0 {
		return nil
	}
	_, resp, err := c.rest.Issues.AddLabelsToIssue(ctx, c.repo.Owner, c.repo.Name, number, names)
	if err != nil {
		return classify(fmt.Sprintf("labelling PR #%d", number), err, resp, nil)
	}
	return nil
}

// RemoveLabels removes labels by name; one the PR does not carry is no error.
func (c *Client) RemoveLabels(ctx context.Context, number int, names []string) error {
	for _, n := range names {
		resp, err := c.rest.Issues.RemoveLabelForIssue(ctx, c.repo.Owner, c.repo.Name, number, n)
		if err != nil && (resp == nil || resp.StatusCode != http.StatusNotFound) {
			return classify(fmt.Sprintf("unlabelling PR #%d", number), err, resp, nil)
		}
	}
	return nil
}

func labelNames(ls []*gh.Label) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.GetName())
	}
	return out
}
