package github

import (
	"context"
	"fmt"

	gh "github.com/google/go-github/v92/github"

	"github.com/nudgeflow/nudgeflow/internal/forge"
)

var (
	_ forge.TitleEditor = (*Client)(nil)
	_ forge.Labeler     = (*Client)(nil)
)

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

func labelNames(ls []*gh.Label) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.GetName())
	}
	return out
}
