// Package forgejo implements forge.Forge for Forgejo and Gitea (one API, /api/v1) with
// the Gitea SDK, plus one raw request where the two servers name a field differently.
//
// What differs from GitHub:
//   - A push is one request: the multi-file contents API (POST /repos/{o}/{r}/contents)
//     commits the changed files on the base branch's head and, with new_branch set to
//     the PR branch and a force flag, creates or force-moves that branch to the commit.
//     The flag is force_push on Gitea (>= 1.24) and force_overwrite_new_branch on
//     Forgejo; both are sent, each server ignores the other's.
//   - A caller that asks for it (forge.Push.GitProtocol: the direct nudge writer)
//     pushes over git's smart HTTP instead (gitpush.go): one receive-pack request,
//     one ref update whose old value is the head read, a compare-and-swap on every
//     version of both servers, where the API's compare-and-swap is three ref writes.
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
	"sync"
	"time"
	"unicode/utf8"

	"code.gitea.io/sdk/gitea"
	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/internal/forge"
)

// apiBase is the API root of a Forgejo or Gitea host (build-service's Renovate endpoint
// is the same https://<host>/api/v1/).
func apiBase(repo forge.Repo) string { return repo.Scheme + "://" + repo.Host + "/api/v1" }

// defaultTimeout bounds each HTTP request when ClientOptions.Timeout is zero: the contents
// API clones the repository and runs the push hooks server-side, which is slower than
// a GitHub write, and one request must stay under the sync activity's one-minute
// heartbeat timeout.
const defaultTimeout = 50 * time.Second

// Client is a forge.Forge for one Forgejo or Gitea repository.
type Client struct {
	repo forge.Repo
	bot  forge.Signature
	api  *gitea.Client
	hc   *http.Client
	tr   *forge.Transport

	// trees are the listings Files read last, by tree SHA (immutable): the push
	// that follows a rewrite of the same tree reads it no second time.
	treesMu sync.Mutex
	trees   map[string][]gitea.GitEntry
}

// maxCachedTrees bounds the listings a Client keeps (a write reads two or three).
const maxCachedTrees = 4

var _ forge.Forge = (*Client)(nil)

// New returns a Client authenticating with a token (an access token of the bot user).
func New(o forge.ClientOptions) (*Client, error) {
	hc, tr, err := forge.HTTPClient(o, defaultTimeout, func(r *http.Request) {
		if isReceivePack(r) {
			// git's smart HTTP takes the token as a basic-auth password (the user
			// name is not checked); the token stays in this closure, never in a URL.
			r.SetBasicAuth("nudgeflow", o.Token)
			return
		}
		r.Header.Set("Authorization", "token "+o.Token)
	})
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
	entries, err := c.listTree(ctx, tree)
	if err != nil {
		return nil, err
	}
	var out []forge.File
	for _, e := range entries {
		if e.Type == "blob" {
			out = append(out, forge.File{Path: e.Path, Mode: e.Mode, SHA: e.SHA})
		}
	}
	return out, nil
}

// listTree reads every entry of a tree (blobs, trees, submodules), recursively,
// and keeps the listing for treeEntries.
func (c *Client) listTree(ctx context.Context, tree string) ([]gitea.GitEntry, error) {
	var out []gitea.GitEntry
	for page := 1; ; page++ {
		t, resp, err := c.with(ctx).GetTrees(c.repo.Owner, c.repo.Name, gitea.ListTreeOptions{
			Ref: tree, Recursive: true, ListOptions: gitea.ListOptions{Page: page}})
		if err != nil {
			return nil, classify(fmt.Sprintf("reading tree %s (page %d)", tree, page), err, resp)
		}
		out = append(out, t.Entries...)
		if !t.Truncated || len(t.Entries) == 0 {
			c.treesMu.Lock()
			if c.trees == nil || len(c.trees) >= maxCachedTrees {
				c.trees = map[string][]gitea.GitEntry{}
			}
			c.trees[tree] = out
			c.treesMu.Unlock()
			return out, nil
		}
		if page >= 10000 {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tree %s of %s has too many pages", tree, c.repo.FullName()), "TreeTruncated", nil)
		}
	}
}

// treeEntries is the listing of tree: the one Files read last when it is kept,
// else read now.
func (c *Client) treeEntries(ctx context.Context, tree string) ([]gitea.GitEntry, error) {
	c.treesMu.Lock()
	entries, ok := c.trees[tree]
	c.treesMu.Unlock()
	if ok {
		return entries, nil
	}
	return c.listTree(ctx, tree)
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
//
// With p.GitProtocol (and a bot identity to commit as) the push is one git push
// instead (pushGit): the commit is built on p.Parent itself and the branch moved
// from p.ExpectedHead (created, when it does not exist) in one request; only a
// server that takes no push over HTTP gets the API's writes.
func (c *Client) Push(ctx context.Context, p forge.Push) (forge.Commit, error) {
	base, err := c.baseBranchOf(ctx, p)
	if err != nil {
		return forge.Commit{}, err
	}
	files, err := c.fileOps(ctx, p)
	if err != nil {
		return forge.Commit{}, err
	}
	if p.GitProtocol && len(files) > 0 && c.bot.Email != "" {
		cm, served, err := c.pushGit(ctx, p)
		if err != nil || served {
			return cm, err
		}
		// The server takes no push over HTTP (git over HTTP disabled, or no git
		// there at all): nothing was written, the API's writes follow.
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
		// The caller's rewrite read this tree just before (Files): not read again.
		entries, err := c.treeEntries(ctx, p.Parent.Tree)
		if err != nil {
			return nil, err
		}
		have = make(map[string]string, len(entries))
		for _, e := range entries {
			if e.Type == "blob" {
				have[e.Path] = e.SHA
			}
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
	req, err := http.NewRequestWithContext(ctx, method, apiBase(c.repo)+path, body)
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
