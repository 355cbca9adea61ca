package forgejo

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"code.gitea.io/sdk/gitea"

	"github.com/nudgeflow/nudgeflow/internal/forge"
)

var (
	_ forge.TitleEditor = (*Client)(nil)
	_ forge.Labeler     = (*Client)(nil)
	_ forge.AutoMerger  = (*Client)(nil)
)

// EditTitle sets the title and, with body, the description: one PATCH.
func (c *Client) EditTitle(ctx context.Context, number int, title string, body *string) (forge.PR, error) {
	p, resp, err := c.with(ctx).EditPullRequest(c.repo.Owner, c.repo.Name, int64(number), gitea.EditPullRequestOption{Title: title, Body: body})
	if err != nil {
		return forge.PR{}, classify(fmt.Sprintf("editing PR #%d", number), err, resp)
	}
	return toPR(p), nil
}

// AddLabels adds the labels the repository or its organization defines, by name,
// as Renovate's Gitea platform does (it looks each name up and drops the unknown).
func (c *Client) AddLabels(ctx context.Context, number int, names []string) error {
	ids, err := c.labelIDs(ctx, names)
	if err != nil || len(ids) == 0 {
		return err
	}
	_, resp, err := c.with(ctx).AddIssueLabels(c.repo.Owner, c.repo.Name, int64(number), gitea.IssueLabelsOption{Labels: ids})
	if err != nil {
		return classify(fmt.Sprintf("labelling PR #%d", number), err, resp)
	}
	return nil
}

// RemoveLabels removes the labels, by name (those the repository defines).
func (c *Client) RemoveLabels(ctx context.Context, number int, names []string) error {
	ids, err := c.labelIDs(ctx, names)
	if err != nil {
		return err
	}
	for _, id := range ids {
		resp, err := c.with(ctx).DeleteIssueLabel(c.repo.Owner, c.repo.Name, int64(number), id)
		if err != nil && (resp == nil || resp.StatusCode != http.StatusNotFound) {
			return classify(fmt.Sprintf("unlabelling PR #%d", number), err, resp)
		}
	}
	return nil
}

// labelIDs looks names up among the repository's labels, then its organization's
// (a user's repository has none: not an error).
func (c *Client) labelIDs(ctx context.Context, names []string) ([]int64, error) {
	if len(names) == 0 {
		return nil, nil
	}
	byName := map[string]int64{}
	for page := 1; page <= 20; page++ {
		ls, resp, err := c.with(ctx).ListRepoLabels(c.repo.Owner, c.repo.Name, gitea.ListLabelsOptions{ListOptions: gitea.ListOptions{Page: page, PageSize: 50}})
		if err != nil {
			return nil, classify("listing the repository's labels", err, resp)
		}
		for _, l := range ls {
			if _, ok := byName[l.Name]; !ok {
				byName[l.Name] = l.ID
			}
		}
		if len(ls) == 0 || resp == nil || resp.NextPage == 0 {
			break
		}
	}
	if ls, _, err := c.with(ctx).ListOrgLabels(c.repo.Owner, gitea.ListOrgLabelsOptions{ListOptions: gitea.ListOptions{PageSize: 50}}); err == nil {
		for _, l := range ls {
			if _, ok := byName[l.Name]; !ok {
				byName[l.Name] = l.ID
			}
		}
	}
	var ids []int64
	for _, n := range names {
		if id, ok := byName[n]; ok {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// EnableAutoMerge schedules the merge once the checks succeed, as Renovate's
// Gitea platform does on opening a PR with platformAutomerge: the repository's
// first allowed merge style in Renovate's order (rebase, rebase-merge, squash,
// merge), the branch deleted after the merge, and only on servers that delete it
// (Gitea >= 1.24, Forgejo >= 10); on older ones Renovate enables nothing.
func (c *Client) EnableAutoMerge(ctx context.Context, pr forge.PR) (bool, error) {
	var v struct {
		Version string `json:"version"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/version", nil, &v); err != nil {
		return false, err
	}
	if !autoMergeDeletesBranch(v.Version) {
		return false, nil
	}
	r, resp, err := c.with(ctx).GetRepo(c.repo.Owner, c.repo.Name)
	if err != nil {
		return false, classify("reading repository "+c.repo.FullName(), err, resp)
	}
	var style string
	switch {
	case r.AllowRebase:
		style = "rebase"
	case r.AllowRebaseMerge:
		style = "rebase-merge"
	case r.AllowSquash:
		style = "squash"
	case r.AllowMerge:
		style = "merge"
	default:
		return false, nil
	}
	path := fmt.Sprintf("/repos/%s/%s/pulls/%d/merge", url.PathEscape(c.repo.Owner), url.PathEscape(c.repo.Name), pr.Number)
	if _, err := c.do(ctx, http.MethodPost, path, map[string]any{"Do": style, "merge_when_checks_succeed": true, "delete_branch_after_merge": true}, nil); err != nil {
		return false, err
	}
	return true, nil
}

// autoMergeDeletesBranch is Renovate's version gate for Gitea-native automerge:
// Gitea 1.24.0 or newer, Forgejo (a version with "gitea-" in it, Renovate's test)
// 10.0.0 or newer.
func autoMergeDeletesBranch(version string) bool {
	v := strings.TrimPrefix(strings.TrimSpace(version), "v")
	forgejo := strings.Contains(v, "gitea-")
	major, minor := leadingVersion(v)
	if forgejo {
		return major >= 10
	}
	return major > 1 || (major == 1 && minor >= 24)
}

// leadingVersion reads "major.minor" at the start of v (0, 0 when unreadable).
func leadingVersion(v string) (int, int) {
	end := strings.IndexFunc(v, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
	if end >= 0 {
		v = v[:end]
	}
	parts := strings.Split(v, ".")
	major, _ := strconv.Atoi(parts[0])
	minor := 0
	if len(parts) > 1 {
		minor, _ = strconv.Atoi(parts[1])
	}
	return major, minor
}
