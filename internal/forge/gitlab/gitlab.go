// Package gitlab implements forge.Forge with GitLab's REST API v4
// (gitlab.com/gitlab-org/api/client-go): branches, commits, the repository tree
// and raw blobs to read; the Commits API to push in one request; merge requests,
// drafts by the "Draft:" title prefix, and notes.
package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"time"
	"unicode/utf8"

	gl "gitlab.com/gitlab-org/api/client-go"
	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/internal/forge"
)

// draftPrefix marks a merge request as draft. Every GitLab version since 13.2
// honours it; the `draft` attribute of the API came later, so nudgeflow writes the
// prefix and reads both.
const draftPrefix = "Draft: "

// draftTitle is GitLab's draft title rule (MergeRequest::DRAFT_REGEX): "[Draft]",
// "(Draft)" or "Draft:" at the start, case-insensitive.
var draftTitle = regexp.MustCompile(`(?i)^\s*(\[draft\]|\(draft\)|draft:)\s*`)

// isDraftTitle reports whether GitLab treats a title as a draft's.
func isDraftTitle(title string) bool { return draftTitle.MatchString(title) }

// readyTitle is title without its draft prefixes.
func readyTitle(title string) string {
	for draftTitle.MatchString(title) {
		title = draftTitle.ReplaceAllString(title, "")
	}
	return title
}

// endpoint is the API root of a host: <scheme>://<host>/api/v4/.
func endpoint(repo forge.Repo) string { return repo.Scheme + "://" + repo.Host + "/api/v4/" }

// defaultTimeout bounds each HTTP request when ClientOptions.Timeout is zero.
const defaultTimeout = 30 * time.Second

// Client is a forge.Forge for one GitLab project.
type Client struct {
	repo forge.Repo
	pid  string // "group/project": the client library escapes it (group%2Fproject)
	bot  forge.Signature
	// committer is whom GitLab records as the committer of the commits this client
	// writes: the token's user with its commit email.
	committer forge.Signature
	api       *gl.Client
	tr        *forge.Transport
}

var _ forge.Forge = (*Client)(nil)

// New returns a Client authenticating with a personal, project or group access
// token; an empty o.Bot is the token's user (GET /user).
func New(ctx context.Context, o forge.ClientOptions) (*Client, error) {
	// The token travels in PRIVATE-TOKEN, set by the library: nothing to authorize here.
	hc, tr, err := forge.HTTPClient(o, defaultTimeout, nil)
	if err != nil {
		return nil, fmt.Errorf("gitlab: %w", err)
	}
	api, err := gl.NewClient(o.Token, gl.WithBaseURL(endpoint(o.Repo)), gl.WithHTTPClient(hc),
		// Retries are Temporal's (with the server's delay), never the library's.
		gl.WithoutRetries())
	if err != nil {
		return nil, fmt.Errorf("gitlab client for %s: %w", o.Repo.Host, err)
	}
	c := &Client{repo: o.Repo, pid: o.Repo.FullName(), bot: o.Bot, api: api, tr: tr}
	// GitLab writes every commit as the token's user: the committer is the user's
	// commit email (commit_email, which GET /user returns as commit_email_or_default),
	// the author too unless author_email names another. Read it even with --bot-email,
	// so the bot knows its own commits.
	u, err := c.currentUser(ctx)
	if err != nil {
		return nil, err
	}
	c.committer = forge.Signature{Name: u.Name, Email: u.commitEmail()}
	if c.bot.Email == "" {
		c.bot = c.committer
	}
	return c, nil
}

// user is the part of GET /user nudgeflow reads; the client library's User has no
// commit_email.
type user struct {
	Name        string `json:"name"`
	Email       string `json:"email"`
	CommitEmail string `json:"commit_email"`
	PublicEmail string `json:"public_email"`
}

func (u user) commitEmail() string {
	for _, e := range []string{u.CommitEmail, u.Email, u.PublicEmail} {
		if e != "" {
			return e
		}
	}
	return ""
}

func (c *Client) currentUser(ctx context.Context) (user, error) {
	req, err := c.api.NewRequest(http.MethodGet, "user", nil, []gl.RequestOptionFunc{gl.WithContext(ctx)})
	if err != nil {
		return user{}, fmt.Errorf("gitlab: reading the token's user: %w", err)
	}
	var u user
	resp, err := c.api.Do(req, &u)
	if err != nil {
		return user{}, classify("reading the token's user", err, resp)
	}
	return u, nil
}

// BotCommitter is whom GitLab records as the committer of this client's commits.
func (c *Client) BotCommitter() forge.Signature { return c.committer }

// Writes counts write requests (POST, PUT, DELETE).
func (c *Client) Writes() int { return c.tr.Writes() }

// Bot is the commit identity.
func (c *Client) Bot() forge.Signature { return c.bot }

func (c *Client) DefaultBranch(ctx context.Context) (string, error) {
	p, resp, err := c.api.Projects.GetProject(c.pid, nil, gl.WithContext(ctx))
	if err != nil {
		return "", classify("reading project "+c.pid, err, resp)
	}
	return p.DefaultBranch, nil
}

func (c *Client) BranchHead(ctx context.Context, branch string) (forge.Commit, bool, error) {
	b, resp, err := c.api.Branches.GetBranch(c.pid, branch, gl.WithContext(ctx))
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return forge.Commit{}, false, nil
		}
		return forge.Commit{}, false, classify("reading branch "+branch, err, resp)
	}
	if b.Commit == nil {
		return forge.Commit{}, false, fmt.Errorf("branch %s of %s has no commit", branch, c.pid)
	}
	// The branch answer carries the whole head commit: no second read.
	return toCommit(b.Commit), true, nil
}

func (c *Client) Commit(ctx context.Context, sha string) (forge.Commit, error) {
	cm, resp, err := c.api.Commits.GetCommit(c.pid, sha, nil, gl.WithContext(ctx))
	if err != nil {
		return forge.Commit{}, classify("reading commit "+sha, err, resp)
	}
	return toCommit(cm), nil
}

// toCommit: GitLab's API names no tree object, and its tree listing reads by ref,
// so a commit's Tree is the commit itself (Files accepts it).
func toCommit(cm *gl.Commit) forge.Commit {
	return forge.Commit{SHA: cm.ID, Tree: cm.ID, Parents: append([]string(nil), cm.ParentIDs...), Message: cm.Message,
		Author:    forge.Signature{Name: cm.AuthorName, Email: cm.AuthorEmail},
		Committer: forge.Signature{Name: cm.CommitterName, Email: cm.CommitterEmail}}
}

// Files lists every blob at a ref (a commit SHA, see toCommit), 100 a page.
func (c *Client) Files(ctx context.Context, tree string) ([]forge.File, error) {
	opt := &gl.ListTreeOptions{ListOptions: gl.ListOptions{PerPage: 100, Page: 1}, Ref: new(tree), Recursive: new(true)}
	var out []forge.File
	for {
		nodes, resp, err := c.api.Repositories.ListTree(c.pid, opt, gl.WithContext(ctx))
		if err != nil {
			return nil, classify("listing the tree of "+tree, err, resp)
		}
		for _, n := range nodes {
			if n.Type == "blob" {
				out = append(out, forge.File{Path: n.Path, Mode: n.Mode, SHA: n.ID})
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

func (c *Client) Blob(ctx context.Context, sha string) ([]byte, error) {
	b, resp, err := c.api.Repositories.RawBlobContent(c.pid, sha, gl.WithContext(ctx))
	if err != nil {
		return nil, classify("reading blob "+sha, err, resp)
	}
	return b, nil
}

// Push is one Commits API request: the changed files as update actions on
// start_sha (the parent), force-moving or creating the branch. The head is read
// right before it, the last moment a person's commit can still be noticed.
//
// GitLab offers no compare-and-swap on a branch head through its API: the Commits
// API's force skips the existing-branch check and takes no expected head,
// last_commit_id is per file (the file's last commit, not the branch's), and the
// Branches API only creates and deletes. So a person's push landing between this
// read and the write can be overwritten: the window is one request, the
// narrowest the API allows (docs/changegroup.md, "A push never overwrites").
func (c *Client) Push(ctx context.Context, p forge.Push) (forge.Commit, error) {
	paths := make([]string, 0, len(p.Files))
	for path := range p.Files {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	actions := make([]*gl.CommitActionOptions, 0, len(paths))
	for _, path := range paths {
		if !utf8.Valid(p.Files[path]) {
			return forge.Commit{}, temporal.NewNonRetryableApplicationError("file "+path+" is not UTF-8 text", "NotText", nil)
		}
		action := gl.FileUpdate
		if slices.Contains(p.New, path) {
			action = gl.FileCreate
		}
		actions = append(actions, &gl.CommitActionOptions{Action: new(action), FilePath: new(path), Content: new(string(p.Files[path]))})
	}
	now, ok, err := c.BranchHead(ctx, p.Branch)
	if err != nil {
		return forge.Commit{}, err
	}
	if ok != p.Exists || (ok && now.SHA != p.ExpectedHead) {
		return forge.Commit{}, forge.ErrHeadMoved
	}
	opt := &gl.CreateCommitOptions{Branch: new(p.Branch), CommitMessage: new(p.Message), StartSHA: new(p.Parent.SHA),
		Actions: actions, Force: new(true)}
	if c.bot.Email != "" {
		opt.AuthorEmail, opt.AuthorName = new(c.bot.Email), new(c.bot.Name)
	}
	cm, resp, err := c.api.Commits.CreateCommit(c.pid, opt, gl.WithContext(ctx))
	if err != nil {
		return forge.Commit{}, classify("committing to branch "+p.Branch, err, resp)
	}
	return toCommit(cm), nil
}

var _ forge.PRFilesLister = (*Client)(nil)

// PRFiles lists a merge request's changed files (the merge request diffs API, 100 a
// page), in GitHub's words: new, deleted, renamed, else modified.
func (c *Client) PRFiles(ctx context.Context, number int) ([]forge.ChangedFile, error) {
	opt := &gl.ListMergeRequestDiffsOptions{ListOptions: gl.ListOptions{PerPage: 100, Page: 1}}
	var out []forge.ChangedFile
	for {
		diffs, resp, err := c.api.MergeRequests.ListMergeRequestDiffs(c.pid, int64(number), opt, gl.WithContext(ctx))
		if err != nil {
			return nil, classify(fmt.Sprintf("listing the diffs of merge request !%d", number), err, resp)
		}
		for _, d := range diffs {
			f := forge.ChangedFile{Path: d.NewPath, Status: forge.ChangeModified}
			switch {
			case d.NewFile:
				f.Status = forge.ChangeAdded
			case d.DeletedFile:
				f.Status = forge.ChangeRemoved
			case d.RenamedFile:
				f.Status, f.PreviousPath = forge.ChangeRenamed, d.OldPath
			}
			out = append(out, f)
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

func toPR(m *gl.BasicMergeRequest) forge.PR {
	pr := forge.PR{Number: int(m.IID), URL: m.WebURL, Title: m.Title, Body: m.Description,
		Open: m.State == "opened", Merged: m.State == "merged",
		Draft: m.Draft || isDraftTitle(m.Title), // the title: servers older than the draft field
		Head:  m.SourceBranch, HeadSHA: m.SHA, Base: m.TargetBranch, Author: author(m)}
	if pr.Merged {
		pr.MergeCommitSHA = mergeCommit(m)
	}
	return pr
}

func author(m *gl.BasicMergeRequest) string {
	if m.Author == nil {
		return ""
	}
	return m.Author.Username
}

// mergeCommit is the commit a merge put on the target branch: merge_commit_sha
// (merge-commit methods, squashed or not), else squash_commit_sha (a squash merge
// in a fast-forward project, where merge_commit_sha is null), else the source
// head (a fast-forward merge without squash: the head itself lands).
func mergeCommit(m *gl.BasicMergeRequest) string {
	switch {
	case m.MergeCommitSHA != "":
		return m.MergeCommitSHA
	case m.SquashCommitSHA != "":
		return m.SquashCommitSHA
	}
	return m.SHA
}

func (c *Client) FindPR(ctx context.Context, branch string, number int) (forge.PR, bool, error) {
	if number > 0 {
		m, resp, err := c.api.MergeRequests.GetMergeRequest(c.pid, int64(number), nil, gl.WithContext(ctx))
		if err != nil {
			if resp != nil && resp.StatusCode == http.StatusNotFound {
				return forge.PR{}, false, nil
			}
			return forge.PR{}, false, classify(fmt.Sprintf("reading merge request !%d", number), err, resp)
		}
		return toPR(&m.BasicMergeRequest), true, nil
	}
	ms, resp, err := c.api.MergeRequests.ListProjectMergeRequests(c.pid, &gl.ListProjectMergeRequestsOptions{
		State: new("opened"), SourceBranch: new(branch), OrderBy: new("created_at"), Sort: new("desc")}, gl.WithContext(ctx))
	if err != nil {
		return forge.PR{}, false, classify("listing merge requests of branch "+branch, err, resp)
	}
	if len(ms) == 0 {
		return forge.PR{}, false, nil
	}
	return toPR(ms[0]), true, nil
}

// BranchPRs lists the merge requests of branch in every state, newest first
// (forge.BranchPRLister).
func (c *Client) BranchPRs(ctx context.Context, branch string, max int) ([]forge.PR, error) {
	ms, resp, err := c.api.MergeRequests.ListProjectMergeRequests(c.pid, &gl.ListProjectMergeRequestsOptions{
		ListOptions:  gl.ListOptions{PerPage: int64(max), Page: 1},
		SourceBranch: new(branch), OrderBy: new("created_at"), Sort: new("desc")}, gl.WithContext(ctx))
	if err != nil {
		return nil, classify("listing merge requests of branch "+branch, err, resp)
	}
	out := make([]forge.PR, 0, len(ms))
	for _, m := range ms {
		out = append(out, toPR(m))
	}
	return out, nil
}

// CreatePR opens a merge request; a draft gets the "Draft:" title prefix.
func (c *Client) CreatePR(ctx context.Context, in forge.NewPR) (forge.PR, error) {
	title := in.Title
	if in.Draft && !isDraftTitle(title) {
		title = draftPrefix + title
	}
	m, resp, err := c.api.MergeRequests.CreateMergeRequest(c.pid, &gl.CreateMergeRequestOptions{
		Title: new(title), Description: new(in.Body), SourceBranch: new(in.Head), TargetBranch: new(in.Base)}, gl.WithContext(ctx))
	if err != nil {
		return forge.PR{}, classify("creating a merge request from "+in.Head, err, resp)
	}
	return toPR(&m.BasicMergeRequest), nil
}

// EditPR changes the description and the state; the title (and so the draft
// prefix) is left as it is.
func (c *Client) EditPR(ctx context.Context, number int, body *string, open *bool) (forge.PR, error) {
	opt := &gl.UpdateMergeRequestOptions{Description: body}
	if open != nil {
		opt.StateEvent = new(map[bool]string{true: "reopen", false: "close"}[*open])
	}
	m, resp, err := c.api.MergeRequests.UpdateMergeRequest(c.pid, int64(number), opt, gl.WithContext(ctx))
	if err != nil {
		return forge.PR{}, classify(fmt.Sprintf("editing merge request !%d", number), err, resp)
	}
	return toPR(&m.BasicMergeRequest), nil
}

// MarkReady is one PUT: the title without its draft prefix and, with body, the new
// description. GitLab sends one update event without oldrev, which Pipelines as
// Code does not build (pkg/provider/gitlab/detect.go).
func (c *Client) MarkReady(ctx context.Context, pr forge.PR, body *string) error {
	opt := &gl.UpdateMergeRequestOptions{Title: new(readyTitle(pr.Title)), Description: body}
	_, resp, err := c.api.MergeRequests.UpdateMergeRequest(c.pid, int64(pr.Number), opt, gl.WithContext(ctx))
	if err != nil {
		return classify(fmt.Sprintf("marking merge request !%d ready", pr.Number), err, resp)
	}
	return nil
}

// Comments lists the merge request's notes written by users (system notes, such
// as "marked this merge request as ready", are left out).
func (c *Client) Comments(ctx context.Context, number int) ([]forge.Comment, error) {
	var out []forge.Comment
	opt := &gl.ListMergeRequestNotesOptions{ListOptions: gl.ListOptions{PerPage: 100, Page: 1}, OrderBy: new("created_at"), Sort: new("asc")}
	for {
		ns, resp, err := c.api.Notes.ListMergeRequestNotes(c.pid, int64(number), opt, gl.WithContext(ctx))
		if err != nil {
			return nil, classify(fmt.Sprintf("listing notes of merge request !%d", number), err, resp)
		}
		for _, n := range ns {
			if !n.System {
				out = append(out, forge.Comment{ID: n.ID, Body: n.Body})
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

func (c *Client) CreateComment(ctx context.Context, number int, body string) error {
	_, resp, err := c.api.Notes.CreateMergeRequestNote(c.pid, int64(number), &gl.CreateMergeRequestNoteOptions{Body: new(body)}, gl.WithContext(ctx))
	if err != nil {
		return classify(fmt.Sprintf("commenting on merge request !%d", number), err, resp)
	}
	return nil
}

// CIReports reads the commit's statuses (the newest of each name, every page):
// Pipelines as Code reports there, and so does every job of GitLab CI; GitLab
// keeps statuses set through the API in an "external" pipeline of the commit. The
// commit's other pipelines (GitLab CI's own: merge request, push, ...) are
// reports too, so one without jobs yet still counts.
func (c *Client) CIReports(ctx context.Context, sha string) ([]forge.CIReport, error) {
	var out []forge.CIReport
	opt := &gl.GetCommitStatusesOptions{ListOptions: gl.ListOptions{PerPage: 100, Page: 1}}
	for {
		list, resp, err := c.api.Commits.GetCommitStatuses(c.pid, sha, opt, gl.WithContext(ctx))
		if err != nil {
			return nil, classify("reading the commit statuses of "+sha, err, resp)
		}
		for _, st := range list {
			out = append(out, forge.CIReport{Kind: forge.CIStatus, Name: st.Name, State: st.Status, Title: st.Description})
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	pipelines, resp, err := c.api.Pipelines.ListProjectPipelines(c.pid, &gl.ListProjectPipelinesOptions{
		ListOptions: gl.ListOptions{PerPage: 100}, SHA: new(sha)}, gl.WithContext(ctx))
	if err != nil {
		return nil, classify("listing the pipelines of "+sha, err, resp)
	}
	for _, p := range pipelines {
		if p.Source == "external" {
			continue // the statuses above, read one by one
		}
		name := p.Name
		if name == "" {
			name = fmt.Sprintf("pipeline #%d (%s)", p.ID, p.Source)
		}
		out = append(out, forge.CIReport{Kind: forge.CIPipeline, Name: name, State: p.Status})
	}
	return out, nil
}

// classify turns a GitLab failure into a Temporal error whose message holds the
// operation, the status and GitLab's message, never a request header:
//   - 429 (and 403 with Retry-After or RateLimit-Remaining 0) are retryable with
//     NextRetryDelay from Retry-After, else RateLimit-Reset;
//   - 401 is retryable, typed "Unauthorized" (a rotated token; the workflow bounds it);
//   - other 4xx are non-retryable, typed "GitLab<status>";
//   - 5xx are retryable, typed "GitLab<status>"; network errors are plain (retryable).
func classify(op string, err error, resp *gl.Response) error {
	var status int
	var header http.Header
	msg := ""
	var er *gl.ErrorResponse
	switch {
	case errors.As(err, &er) && er.Response != nil:
		status, header, msg = er.Response.StatusCode, er.Response.Header, er.Message
	case resp != nil && resp.Response != nil && resp.StatusCode >= 400:
		status, header = resp.StatusCode, resp.Header
	}
	if status == 0 {
		var ne net.Error
		if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s: network: %s", op, forge.Truncate(err.Error()))
		}
		return fmt.Errorf("%s: %s", op, forge.Truncate(err.Error()))
	}
	text := fmt.Sprintf("%s: GitLab answered %d", op, status)
	if msg != "" {
		text += ": " + forge.Truncate(msg)
	}
	return forge.StatusError("GitLab", text, status, header, rateLimitHeaders, "(the forge rejected nudgeflow's credentials; check the SCM Secret's access token)")
}

// rateLimitHeaders: GitLab answers 429 with Retry-After and RateLimit-Reset (Unix
// seconds); some proxies answer 403 with the same headers.
var rateLimitHeaders = forge.RateLimitHeaders{Remaining: "RateLimit-Remaining", Reset: "RateLimit-Reset"}
