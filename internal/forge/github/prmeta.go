package github

import (
	"context"
	"fmt"
	"net/http"

	gh "github.com/google/go-github/v92/github"
	"github.com/shurcooL/githubv4"

	"github.com/nudgeflow/nudgeflow/internal/forge"
)

var (
	_ forge.TitleEditor  = (*Client)(nil)
	_ forge.Labeler      = (*Client)(nil)
	_ forge.BotCommitter = (*Client)(nil)
	_ forge.AutoMerger   = (*Client)(nil)
)

// EnableAutoMerge turns on GitHub's auto-merge of the PR, as Renovate's GitHub
// platform does with platformAutomerge: only where the repository allows
// auto-merge (else nothing, enabled false), with the first merge method the
// repository allows in Renovate's order (squash, merge, rebase). A refusal of the
// mutation (the PR already mergeable, branch protection absent) enables nothing,
// as Renovate logs it and goes on.
func (c *Client) EnableAutoMerge(ctx context.Context, pr forge.PR) (bool, error) {
	var q struct {
		Repository struct {
			AutoMergeAllowed   bool
			SquashMergeAllowed bool
			MergeCommitAllowed bool
			RebaseMergeAllowed bool
		} `graphql:"repository(owner: $owner, name: $name)"`
	}
	c.fails.takeFail()
	if err := c.gql.Query(ctx, &q, map[string]any{"owner": githubv4.String(c.repo.Owner), "name": githubv4.String(c.repo.Name)}); err != nil {
		return false, classify("reading the merge settings of "+c.repo.FullName(), err, nil, c.fails.takeFail())
	}
	r := q.Repository
	if !r.AutoMergeAllowed {
		return false, nil
	}
	method := githubv4.PullRequestMergeMethodMerge
	switch {
	case r.SquashMergeAllowed:
		method = githubv4.PullRequestMergeMethodSquash
	case r.MergeCommitAllowed:
		method = githubv4.PullRequestMergeMethodMerge
	case r.RebaseMergeAllowed:
		method = githubv4.PullRequestMergeMethodRebase
	}
	var m struct {
		EnablePullRequestAutoMerge struct {
			ClientMutationID *string
		} `graphql:"enablePullRequestAutoMerge(input: $input)"`
	}
	c.fails.takeFail()
	if err := c.gql.Mutate(ctx, &m, githubv4.EnablePullRequestAutoMergeInput{PullRequestID: githubv4.ID(pr.NodeID), MergeMethod: &method}, nil); err != nil {
		return false, classify(fmt.Sprintf("enabling auto-merge of PR #%d", pr.Number), err, nil, c.fails.takeFail())
	}
	return true, nil
}

// webCommitter is the committer GitHub records on a commit made through its API
// that names none (a platform-native commit).
var webCommitter = forge.Signature{Name: "GitHub", Email: "noreply@github.com"}

// BotCommitter is GitHub's own committer for native commits (zero otherwise: a
// commit names its committer, the bot).
func (c *Client) BotCommitter() forge.Signature {
	if c.native {
		return webCommitter
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
