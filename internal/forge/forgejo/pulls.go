package forgejo

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"code.gitea.io/sdk/gitea"

	"github.com/nudgeflow/nudgeflow/internal/forge"
)

// Pull requests, their comments and the commit statuses CI writes on them.

// draftPrefix is the title prefix that makes a pull request a draft (work in progress).
const draftPrefix = "WIP: "

// draftPrefixes are the prefixes a draft title may start with: the servers' defaults,
// and GitLab's spelling, which admins often add.
var draftPrefixes = []string{"WIP:", "[WIP]", "Draft:", "[Draft]"}

// IsDraftTitle reports whether a title starts with a work-in-progress prefix
// (compared as the servers do, ignoring case).
func IsDraftTitle(title string) bool {
	_, ok := cutDraftPrefix(title)
	return ok
}

func cutDraftPrefix(title string) (string, bool) {
	upper := strings.ToUpper(title)
	for _, p := range draftPrefixes {
		if strings.HasPrefix(upper, strings.ToUpper(p)) {
			return strings.TrimLeft(title[len(p):], " "), true
		}
	}
	return title, false
}

func toPR(p *gitea.PullRequest) forge.PR {
	out := forge.PR{Number: int(p.Index), URL: p.HTMLURL, Title: p.Title, Body: p.Body,
		Open: p.State == gitea.StateOpen, Merged: p.HasMerged || p.Merged != nil,
		Draft: p.Draft || IsDraftTitle(p.Title)}
	if p.Head != nil {
		out.Head, out.HeadSHA = p.Head.Ref, p.Head.Sha
	}
	if p.Base != nil {
		out.Base = p.Base.Ref
	}
	if p.Poster != nil {
		out.Author = p.Poster.UserName
	}
	for _, l := range p.Labels {
		if l != nil {
			out.Labels = append(out.Labels, l.Name)
		}
	}
	if out.Merged && p.MergedCommitID != nil {
		// merge_commit_sha: the commit the merge put on the base (a merge, squash
		// or rebase commit; the head itself for a fast-forward).
		out.MergeCommitSHA = *p.MergedCommitID
	}
	return out
}

var _ forge.PRFilesLister = (*Client)(nil)

// PRFiles lists the files a pull request changes (GET /repos/{o}/{r}/pulls/{n}/files,
// 50 a page, every page), in GitHub's words: Gitea's "deleted" is removed, "copied"
// is added at the new path, "changed" and "unchanged" are modified.
func (c *Client) PRFiles(ctx context.Context, number int) ([]forge.ChangedFile, error) {
	var out []forge.ChangedFile
	for page := 1; ; page++ {
		files, resp, err := c.with(ctx).ListPullRequestFiles(c.repo.Owner, c.repo.Name, int64(number),
			gitea.ListPullRequestFilesOptions{ListOptions: gitea.ListOptions{Page: page, PageSize: 50}})
		if err != nil {
			return nil, classify(fmt.Sprintf("listing the files of PR #%d", number), err, resp)
		}
		for _, f := range files {
			cf := forge.ChangedFile{Path: f.Filename, Status: forge.ChangeModified}
			switch f.Status {
			case "added", "copied":
				cf.Status = forge.ChangeAdded
			case "deleted", "removed":
				cf.Status = forge.ChangeRemoved
			case "renamed":
				cf.Status, cf.PreviousPath = forge.ChangeRenamed, f.PreviousFilename
			}
			out = append(out, cf)
		}
		if len(files) == 0 || resp == nil || resp.NextPage == 0 {
			return out, nil
		}
	}
}

func (c *Client) FindPR(ctx context.Context, branch string, number int) (forge.PR, bool, error) {
	if number > 0 {
		p, resp, err := c.with(ctx).GetPullRequest(c.repo.Owner, c.repo.Name, int64(number))
		if err != nil {
			if resp != nil && resp.StatusCode == http.StatusNotFound {
				return forge.PR{}, false, nil
			}
			return forge.PR{}, false, classify(fmt.Sprintf("reading PR #%d", number), err, resp)
		}
		return toPR(p), true, nil
	}
	// The list has no head filter: page through the open PRs, newest first.
	var best *gitea.PullRequest
	for page := 1; ; page++ {
		ps, resp, err := c.with(ctx).ListRepoPullRequests(c.repo.Owner, c.repo.Name, gitea.ListPullRequestsOptions{
			State: gitea.StateOpen, Sort: "newest", ListOptions: gitea.ListOptions{Page: page, PageSize: 50}})
		if err != nil {
			return forge.PR{}, false, classify("listing PRs of branch "+branch, err, resp)
		}
		for _, p := range ps {
			if p.Head == nil || p.Head.Ref != branch || (p.Head.RepoID != 0 && p.Base != nil && p.Head.RepoID != p.Base.RepoID) {
				continue
			}
			if best == nil || p.Index > best.Index {
				best = p
			}
		}
		if len(ps) == 0 || resp == nil || resp.NextPage == 0 || page >= 200 {
			break
		}
	}
	if best == nil {
		return forge.PR{}, false, nil
	}
	return toPR(best), true, nil
}

// BranchPRs lists the PRs of branch in every state, newest first
// (forge.BranchPRLister). The list has no head filter: it pages through the
// newest PRs, up to 10 pages.
func (c *Client) BranchPRs(ctx context.Context, branch string, max int) ([]forge.PR, error) {
	var out []forge.PR
	for page := 1; page <= 10 && len(out) < max; page++ {
		ps, resp, err := c.with(ctx).ListRepoPullRequests(c.repo.Owner, c.repo.Name, gitea.ListPullRequestsOptions{
			State: gitea.StateAll, Sort: "newest", ListOptions: gitea.ListOptions{Page: page, PageSize: 50}})
		if err != nil {
			return nil, classify("listing PRs of branch "+branch, err, resp)
		}
		for _, p := range ps {
			if p.Head == nil || p.Head.Ref != branch || (p.Head.RepoID != 0 && p.Base != nil && p.Head.RepoID != p.Base.RepoID) {
				continue
			}
			if len(out) < max {
				out = append(out, toPR(p))
			}
		}
		if len(ps) == 0 || resp == nil || resp.NextPage == 0 {
			break
		}
	}
	return out, nil
}

// CreatePR opens the PR; a draft gets the WIP: title prefix. Labels are given by
// id in the same request (those the repository defines, as AddLabels).
func (c *Client) CreatePR(ctx context.Context, in forge.NewPR) (forge.PR, error) {
	title := in.Title
	if in.Draft && !IsDraftTitle(title) {
		title = draftPrefix + title
	}
	labels, err := c.labelIDs(ctx, in.Labels)
	if err != nil {
		return forge.PR{}, err
	}
	p, resp, err := c.with(ctx).CreatePullRequest(c.repo.Owner, c.repo.Name, gitea.CreatePullRequestOption{
		Head: in.Head, Base: in.Base, Title: title, Body: in.Body, Labels: labels})
	if err != nil {
		return forge.PR{}, classify("creating a PR from "+in.Head, err, resp)
	}
	return toPR(p), nil
}

func (c *Client) EditPR(ctx context.Context, number int, body *string, open *bool) (forge.PR, error) {
	opt := gitea.EditPullRequestOption{Body: body}
	if open != nil {
		st := map[bool]gitea.StateType{true: gitea.StateOpen, false: gitea.StateClosed}[*open]
		opt.State = &st
	}
	p, resp, err := c.with(ctx).EditPullRequest(c.repo.Owner, c.repo.Name, int64(number), opt)
	if err != nil {
		return forge.PR{}, classify(fmt.Sprintf("editing PR #%d", number), err, resp)
	}
	return toPR(p), nil
}

// MarkReady drops the work-in-progress prefix and, with body, sets the description:
// one PATCH. Both are "edited" events, which start no build in Pipelines as Code.
func (c *Client) MarkReady(ctx context.Context, pr forge.PR, body *string) error {
	title, draft := cutDraftPrefix(pr.Title)
	if !draft && body == nil {
		return nil
	}
	if strings.TrimSpace(title) == "" {
		title = pr.Title // never an empty title
	}
	opt := gitea.EditPullRequestOption{Body: body}
	if draft {
		opt.Title = title
	}
	_, resp, err := c.with(ctx).EditPullRequest(c.repo.Owner, c.repo.Name, int64(pr.Number), opt)
	if err != nil {
		return classify(fmt.Sprintf("marking PR #%d ready for review", pr.Number), err, resp)
	}
	return nil
}

func (c *Client) Comments(ctx context.Context, number int) ([]forge.Comment, error) {
	var out []forge.Comment
	for page := 1; ; page++ {
		cs, resp, err := c.with(ctx).ListIssueComments(c.repo.Owner, c.repo.Name, int64(number), gitea.ListIssueCommentOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: 50}})
		if err != nil {
			return nil, classify(fmt.Sprintf("listing comments of PR #%d", number), err, resp)
		}
		for _, cm := range cs {
			out = append(out, forge.Comment{ID: cm.ID, Body: cm.Body})
		}
		if len(cs) == 0 || resp == nil || resp.NextPage == 0 || page >= 200 {
			return out, nil
		}
	}
}

func (c *Client) CreateComment(ctx context.Context, number int, body string) error {
	_, resp, err := c.with(ctx).CreateIssueComment(c.repo.Owner, c.repo.Name, int64(number), gitea.CreateIssueCommentOption{Body: body})
	if err != nil {
		return classify(fmt.Sprintf("commenting on PR #%d", number), err, resp)
	}
	return nil
}

// combinedStatus is GET /repos/{o}/{r}/commits/{ref}/status: the newest status
// of each context (Gitea and Forgejo name the state "status"). Its total_count is
// the page's count; the total is only in a header.
type combinedStatus struct {
	Statuses []struct {
		Status      string `json:"status"`
		Context     string `json:"context"`
		Description string `json:"description"`
	} `json:"statuses"`
}

// CIReports reads the commit's combined status, every page (50 a page, the
// servers' default cap, MAX_RESPONSE_ITEMS): Pipelines as Code, Gitea Actions and
// Forgejo Actions all report as commit statuses.
func (c *Client) CIReports(ctx context.Context, sha string) ([]forge.CIReport, error) {
	const limit = 50
	var out []forge.CIReport
	for page := 1; page <= 200; page++ {
		var st combinedStatus
		path := fmt.Sprintf("/repos/%s/%s/commits/%s/status?page=%d&limit=%d", url.PathEscape(c.repo.Owner), url.PathEscape(c.repo.Name), url.PathEscape(sha), page, limit)
		if _, err := c.do(ctx, http.MethodGet, path, nil, &st); err != nil {
			return nil, err
		}
		for _, s := range st.Statuses {
			out = append(out, forge.CIReport{Kind: forge.CIStatus, Name: s.Context, State: s.Status, Title: s.Description})
		}
		if len(st.Statuses) < limit {
			break
		}
	}
	return out, nil
}
