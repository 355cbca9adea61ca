// Package forgejo implements forge.Forge for Forgejo and Gitea (one API, /api/v1) with
// the Gitea SDK, plus one raw request where the two servers name a field differently.
//
// What differs from GitHub:
//   - A push is one request: the multi-file contents API (POST /repos/{o}/{r}/contents)
//     commits the changed files on the base branch's head and, with new_branch set to
//     the PR branch and a force flag, creates or force-moves that branch to the commit.
//     The flag is force_push on Gitea (>= 1.24) and force_overwrite_new_branch on
//     Forgejo; both are sent, each server ignores the other's.
//   - A draft is a title prefix (WORK_IN_PROGRESS_PREFIXES, "WIP:" and "[WIP]" by
//     default on both; "Draft:" is not one unless an admin adds it). Lifting it and
//     setting the description is one PATCH of the pull request.
package forgejo

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"code.gitea.io/sdk/gitea"
	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/activities/forge"
)

// DraftPrefix is the title prefix that makes a pull request a draft (work in progress).
const DraftPrefix = "WIP: "

// draftPrefixes are the prefixes a draft title may start with: the servers' defaults,
// and GitLab's spelling, which admins often add.
var draftPrefixes = []string{"WIP:", "[WIP]", "Draft:", "[Draft]"}

// APIBase is the API root of a Forgejo or Gitea host (build-service's Renovate endpoint
// is the same https://<host>/api/v1/).
func APIBase(repo forge.Repo) string { return repo.Scheme + "://" + repo.Host + "/api/v1" }

// DefaultTimeout bounds each HTTP request when ClientOptions.Timeout is zero: the contents
// API clones the repository and runs the push hooks server-side, which is slower than
// a GitHub write, and one request must stay under the sync activity's one-minute
// heartbeat timeout.
const DefaultTimeout = 50 * time.Second

// Client is a forge.Forge for one Forgejo or Gitea repository.
type Client struct {
	repo forge.Repo
	bot  forge.Signature
	api  *gitea.Client
	hc   *http.Client
	tr   *forge.Transport
}

var _ forge.Forge = (*Client)(nil)

// New returns a Client authenticating with a token (an access token of the bot user).
func New(o forge.ClientOptions) (*Client, error) {
	hc, tr, err := forge.HTTPClient(o, DefaultTimeout, func(r *http.Request) { r.Header.Set("Authorization", "token "+o.Token) })
	if err != nil {
		return nil, fmt.Errorf("forgejo: %w", err)
	}
	// No version probe: every call used here exists on Gitea >= 1.24 and Forgejo >= 7.
	api, err := gitea.NewClient(o.Repo.Scheme+"://"+o.Repo.Host, gitea.SetHTTPClient(hc), gitea.SetGiteaVersion(""))
	if err != nil {
		return nil, fmt.Errorf("forgejo client for %s: %w", o.Repo.Host, err)
	}
	return &Client{repo: o.Repo, bot: o.Bot, api: api, hc: hc, tr: tr}, nil
}

// Writes counts write requests (POST, PATCH, PUT, DELETE).
func (c *Client) Writes() int { return c.tr.Writes() }

// Bot is the commit identity.
func (c *Client) Bot() forge.Signature { return c.bot }

// with binds the SDK's calls to ctx (the SDK keeps one context per client; a Client
// serves one activity at a time).
func (c *Client) with(ctx context.Context) *gitea.Client {
	c.api.SetContext(ctx)
	return c.api
}

func (c *Client) DefaultBranch(ctx context.Context) (string, error) {
	r, resp, err := c.with(ctx).GetRepo(c.repo.Owner, c.repo.Name)
	if err != nil {
		return "", classify("reading repository "+c.repo.FullName(), err, resp)
	}
	return r.DefaultBranch, nil
}

func (c *Client) BranchHead(ctx context.Context, branch string) (forge.Commit, bool, error) {
	b, resp, err := c.with(ctx).GetRepoBranch(c.repo.Owner, c.repo.Name, branch)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return forge.Commit{}, false, nil
		}
		return forge.Commit{}, false, classify("reading branch "+branch, err, resp)
	}
	if b.Commit == nil || b.Commit.ID == "" {
		return forge.Commit{}, false, temporal.NewApplicationError("branch "+branch+" has no commit", "ForgejoBranch")
	}
	cm, err := c.Commit(ctx, b.Commit.ID)
	return cm, err == nil, err
}

func (c *Client) Commit(ctx context.Context, sha string) (forge.Commit, error) {
	cm, resp, err := c.with(ctx).GetSingleCommit(c.repo.Owner, c.repo.Name, sha)
	if err != nil {
		return forge.Commit{}, classify("reading commit "+sha, err, resp)
	}
	return toCommit(cm), nil
}

func toCommit(cm *gitea.Commit) forge.Commit {
	var out forge.Commit
	if cm.CommitMeta != nil {
		out.SHA = cm.SHA
	}
	if rc := cm.RepoCommit; rc != nil {
		out.Message = rc.Message
		if rc.Tree != nil {
			out.Tree = rc.Tree.SHA
		}
		if rc.Author != nil {
			out.Author = forge.Signature{Name: rc.Author.Name, Email: rc.Author.Email}
		}
		if rc.Committer != nil {
			out.Committer = forge.Signature{Name: rc.Committer.Name, Email: rc.Committer.Email}
		}
	}
	for _, p := range cm.Parents {
		if p != nil {
			out.Parents = append(out.Parents, p.SHA)
		}
	}
	return out
}

// Files pages through the recursive tree listing (the server caps a page at
// [api] DEFAULT_GIT_TREES_PER_PAGE entries, 1000 by default, and says truncated while
// more follow).
func (c *Client) Files(ctx context.Context, tree string) ([]forge.File, error) {
	var out []forge.File
	for page := 1; ; page++ {
		t, resp, err := c.with(ctx).GetTrees(c.repo.Owner, c.repo.Name, gitea.ListTreeOptions{
			Ref: tree, Recursive: true, ListOptions: gitea.ListOptions{Page: page}})
		if err != nil {
			return nil, classify(fmt.Sprintf("reading tree %s (page %d)", tree, page), err, resp)
		}
		for _, e := range t.Entries {
			if e.Type == "blob" {
				out = append(out, forge.File{Path: e.Path, Mode: e.Mode, SHA: e.SHA})
			}
		}
		if !t.Truncated || len(t.Entries) == 0 {
			return out, nil
		}
		if page >= 10000 {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tree %s of %s has too many pages", tree, c.repo.FullName()), "TreeTruncated", nil)
		}
	}
}

func (c *Client) Blob(ctx context.Context, sha string) ([]byte, error) {
	b, resp, err := c.with(ctx).GetBlob(c.repo.Owner, c.repo.Name, sha)
	if err != nil {
		return nil, classify("reading blob "+sha, err, resp)
	}
	if b.Encoding != "base64" {
		return []byte(b.Content), nil
	}
	data, err := base64.StdEncoding.DecodeString(b.Content)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError("blob "+sha+" is not valid base64", "ForgejoBlob", nil)
	}
	return data, nil
}

// changeFiles is the body of POST /repos/{o}/{r}/contents. The force flag has two
// names: Gitea's force_push, Forgejo's force_overwrite_new_branch.
type changeFiles struct {
	Files     []changeFile `json:"files"`
	Message   string       `json:"message"`
	Branch    string       `json:"branch"`
	NewBranch string       `json:"new_branch"`
	Force     bool         `json:"force_push,omitempty"`
	ForceFJ   bool         `json:"force_overwrite_new_branch,omitempty"`
	Author    identity     `json:"author"`
	Committer identity     `json:"committer"`
}

type changeFile struct {
	Operation string `json:"operation"`
	Path      string `json:"path"`
	Content   string `json:"content"`
	// SHA is the blob the base holds: the server refuses the change when the file
	// moved on since the caller read it.
	SHA string `json:"sha,omitempty"`
}

type identity struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

// Push is one request: the contents API commits the changed files on the base
// branch (p.Parent's branch head: each changed file carries the blob SHA it was read
// at, so a base that changed one of them is refused) and creates the PR branch on
// that commit. An existing branch is moved by compare-and-swap where the server
// offers one (Gitea >= 1.26, pushWithLease: three writes); elsewhere (Forgejo,
// older Gitea) the branch head is read again right before the one force-moving
// write, the last moment a person's commit can be noticed: ErrHeadMoved, nothing
// written, and a window of one request remains.
//
// The server commits on the base branch's head, which is p.Parent unless the base
// moved since the caller read it; then the commit is on the newer base (still one
// fresh commit on the base), and the next sync sees the new base. When the base
// changed one of the pushed files, the server refuses it (422 "sha does not match"):
// a retryable BaseMoved error.
func (c *Client) Push(ctx context.Context, p forge.Push) (forge.Commit, error) {
	base, err := c.baseBranchOf(ctx, p)
	if err != nil {
		return forge.Commit{}, err
	}
	files, err := c.fileOps(ctx, p)
	if err != nil {
		return forge.Commit{}, err
	}
	if p.Exists {
		cm, swapped, err := c.pushWithLease(ctx, p, base, files)
		if err != nil || swapped {
			return cm, err
		}
		// The server has no branch update (Forgejo, Gitea before 1.26): no
		// compare-and-swap exists, so the head is read again right before the one
		// write that force-moves the branch, a window of one request.
		now, ok, err := c.BranchHead(ctx, p.Branch)
		if err != nil {
			return forge.Commit{}, err
		}
		if !ok || now.SHA != p.ExpectedHead {
			return forge.Commit{}, forge.ErrHeadMoved
		}
	}
	body := changeFiles{Files: files, Message: p.Message, Branch: base, NewBranch: p.Branch,
		Force: p.Exists, ForceFJ: p.Exists}
	if p.Exists && p.Parent.SHA == p.ExpectedHead {
		// Stacked on the branch's own head (a digest commit on the synthetic
		// commit): the contents API commits on the head of the branch it names, so
		// name the PR branch itself; committing from the base would drop Parent.
		body.Branch, body.NewBranch, body.Force, body.ForceFJ = p.Branch, "", false, false
	}
	c.signAsBot(&body)
	var out struct {
		Commit *struct {
			SHA string `json:"sha"`
		} `json:"commit"`
	}
	status, err := c.do(ctx, http.MethodPost, fmt.Sprintf("/repos/%s/%s/contents", url.PathEscape(c.repo.Owner), url.PathEscape(c.repo.Name)), body, &out)
	if err != nil {
		if !p.Exists && status == http.StatusUnprocessableEntity {
			// Created meanwhile by someone else: never overwritten.
			if _, ok, rerr := c.BranchHead(ctx, p.Branch); rerr == nil && ok {
				return forge.Commit{}, forge.ErrHeadMoved
			}
		}
		if status == http.StatusUnprocessableEntity && strings.Contains(err.Error(), "sha does not match") {
			// A changed file differs on the base now (a merge landed since the caller
			// read it, maybe this PR's own): retryable, the next sync reads the base
			// (and the PR's state) again.
			return forge.Commit{}, temporal.NewApplicationError(fmt.Sprintf("the base branch %s moved under the push: %v", base, err), "BaseMoved")
		}
		return forge.Commit{}, err
	}
	if out.Commit == nil || out.Commit.SHA == "" {
		return forge.Commit{}, temporal.NewApplicationError("the contents API answered without a commit", "ForgejoContents")
	}
	return c.Commit(ctx, out.Commit.SHA)
}

// signAsBot makes the bot author and committer of a contents-API commit, when an
// identity is configured (else the token's user is both).
func (c *Client) signAsBot(body *changeFiles) {
	if c.bot.Email != "" {
		body.Author = identity{Name: c.bot.Name, Email: c.bot.Email}
		body.Committer = body.Author
	}
}

// baseBranchOf finds the branch the parent commit is the head of: the contents API
// takes a branch, not a commit. The callers push on the base branch's head; its name
// is learnt from the repository (the default branch) or from an open PR's base.
func (c *Client) baseBranchOf(ctx context.Context, p forge.Push) (string, error) {
	if p.Base != "" {
		return p.Base, nil
	}
	return c.DefaultBranch(ctx)
}

// fileOps turns the changed files into update (or create) operations, each naming
// the blob the parent holds at that path.
func (c *Client) fileOps(ctx context.Context, p forge.Push) ([]changeFile, error) {
	paths := make([]string, 0, len(p.Files))
	for path := range p.Files {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	var have map[string]string
	if len(paths) > 0 {
		files, err := c.Files(ctx, p.Parent.Tree)
		if err != nil {
			return nil, err
		}
		have = make(map[string]string, len(files))
		for _, f := range files {
			have[f.Path] = f.SHA
		}
	}
	ops := make([]changeFile, 0, len(paths))
	for _, path := range paths {
		content := p.Files[path]
		if !utf8.Valid(content) {
			return nil, temporal.NewNonRetryableApplicationError("file "+path+" is not UTF-8 text", "NotText", nil)
		}
		op := changeFile{Operation: "create", Path: path, Content: base64.StdEncoding.EncodeToString(content)}
		if sha, ok := have[path]; ok {
			op.Operation, op.SHA = "update", sha
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// pushWithLease moves an existing branch with Gitea's compare-and-swap (>= 1.26):
// the contents API commits the files on the base into a scratch branch
// (nudgeflow-next/<branch>: the contents API writes only through branches), then
// PUT /branches/{branch} with old_commit_id moves the PR branch there only if it
// is still at p.ExpectedHead (a git push --force-with-lease inside the server),
// and the scratch branch is deleted. A push by a person after nudgeflow's read is
// never overwritten: ErrHeadMoved. swapped is false, nothing moved, when the
// server has no branch update API (Forgejo; Gitea before 1.26).
func (c *Client) pushWithLease(ctx context.Context, p forge.Push, base string, files []changeFile) (forge.Commit, bool, error) {
	scratch := "nudgeflow-next/" + p.Branch
	from := base
	if p.Parent.SHA == p.ExpectedHead {
		// Stacked on the branch's own head (a digest commit on the synthetic commit):
		// the contents API commits on the head of the branch it names.
		from = p.Branch
	}
	body := changeFiles{Files: files, Message: p.Message, Branch: from, NewBranch: scratch, Force: true, ForceFJ: true}
	c.signAsBot(&body)
	var out struct {
		Commit *struct {
			SHA string `json:"sha"`
		} `json:"commit"`
	}
	repoPath := fmt.Sprintf("/repos/%s/%s", url.PathEscape(c.repo.Owner), url.PathEscape(c.repo.Name))
	status, err := c.do(ctx, http.MethodPost, repoPath+"/contents", body, &out)
	if err != nil {
		if status == http.StatusUnprocessableEntity && strings.Contains(err.Error(), "sha does not match") {
			return forge.Commit{}, false, temporal.NewApplicationError(fmt.Sprintf("the base branch %s moved under the push: %v", base, err), "BaseMoved")
		}
		return forge.Commit{}, false, err
	}
	if out.Commit == nil || out.Commit.SHA == "" {
		return forge.Commit{}, false, temporal.NewApplicationError("the contents API answered without a commit", "ForgejoContents")
	}
	defer func() {
		// Best effort: a scratch branch left behind is reused (force) next time.
		_, _ = c.do(context.WithoutCancel(ctx), http.MethodDelete, repoPath+"/branches/"+escapeBranch(scratch), nil, nil)
	}()
	status, err = c.do(ctx, http.MethodPut, repoPath+"/branches/"+escapeBranch(p.Branch),
		map[string]any{"new_commit_id": out.Commit.SHA, "old_commit_id": p.ExpectedHead, "force": true}, nil)
	switch {
	case err == nil:
		cm, err := c.Commit(ctx, out.Commit.SHA)
		return cm, true, err
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed:
		now, ok, rerr := c.BranchHead(ctx, p.Branch)
		if rerr != nil {
			return forge.Commit{}, false, rerr
		}
		if !ok || now.SHA != p.ExpectedHead {
			return forge.Commit{}, false, forge.ErrHeadMoved
		}
		return forge.Commit{}, false, nil // the branch is there: the API is not
	case status == http.StatusUnprocessableEntity || status == http.StatusConflict:
		// Gitea: "branch commit does not match"; whether the head moved is read.
		if now, ok, rerr := c.BranchHead(ctx, p.Branch); rerr == nil && (!ok || now.SHA != p.ExpectedHead) {
			return forge.Commit{}, false, forge.ErrHeadMoved
		}
	}
	return forge.Commit{}, false, err
}

// escapeBranch escapes each segment of a branch name for a URL path (the server
// routes the rest of the path as the branch).
func escapeBranch(b string) string {
	parts := strings.Split(b, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// do sends one JSON request through the client's transport and decodes the answer.
func (c *Client) do(ctx context.Context, method, path string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, APIBase(c.repo)+path, body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	op := method + " " + path
	if err != nil {
		return 0, classify(op, err, nil)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode >= 300 {
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(data, &e)
		msg := e.Message
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		return resp.StatusCode, classify(op, errors.New(msg), &gitea.Response{Response: resp})
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, temporal.NewApplicationError(op+": unreadable answer", "ForgejoDecode")
		}
	}
	return resp.StatusCode, nil
}

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

// CreatePR opens the PR; a draft gets the WIP: title prefix.
func (c *Client) CreatePR(ctx context.Context, in forge.NewPR) (forge.PR, error) {
	title := in.Title
	if in.Draft && !IsDraftTitle(title) {
		title = DraftPrefix + title
	}
	p, resp, err := c.with(ctx).CreatePullRequest(c.repo.Owner, c.repo.Name, gitea.CreatePullRequestOption{
		Head: in.Head, Base: in.Base, Title: title, Body: in.Body})
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

// classify turns a Forgejo/Gitea failure into a Temporal error whose message holds
// the operation, the status and the server's message, never a request header:
//   - 429, and 403 with Retry-After or X-RateLimit-Remaining 0, are retryable with
//     NextRetryDelay from Retry-After, else X-RateLimit-Reset, else a minute;
//   - 401 is retryable, typed "Unauthorized" (a rotated token; the workflow bounds it);
//   - other 4xx are non-retryable, typed "Forgejo<status>";
//   - 5xx are retryable, typed "Forgejo<status>"; network errors are plain (retryable).
func classify(op string, err error, resp *gitea.Response) error {
	status := 0
	var header http.Header
	if resp != nil && resp.Response != nil {
		status, header = resp.StatusCode, resp.Header
	}
	if status == 0 || status < 300 {
		var ne net.Error
		if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s: network: %s", op, forge.Truncate(err.Error()))
		}
		return fmt.Errorf("%s: %s", op, forge.Truncate(err.Error()))
	}
	text := fmt.Sprintf("%s: the forge answered %d", op, status)
	if msg := strings.TrimSpace(err.Error()); msg != "" {
		text += ": " + forge.Truncate(msg)
	}
	return forge.StatusError("Forgejo", text, status, header, rateLimitHeaders, "(the forge rejected nudgeflow's credentials; check the SCM Secret)")
}

// rateLimitHeaders: Gitea and Forgejo have no API rate limiter; the proxies in front
// of them send Retry-After and GitHub-compatible X-RateLimit-* headers.
var rateLimitHeaders = forge.RateLimitHeaders{Remaining: "X-RateLimit-Remaining", Reset: "X-RateLimit-Reset"}
