// Package github implements forge.Forge with go-github (REST, Git Data API) and
// githubv4 (GraphQL draft mutations).
package github

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	gh "github.com/google/go-github/v92/github"
	"github.com/shurcooL/githubv4"
	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/internal/forge"
)

// endpoints returns the REST base and the GraphQL URL for a host: api.github.com for
// github.com, GitHub Enterprise paths (/api/v3/, /api/graphql) for any other host.
func endpoints(repo forge.Repo) (rest, graphql string) {
	if repo.Host == "github.com" {
		return "https://api.github.com/", "https://api.github.com/graphql"
	}
	base := repo.Scheme + "://" + repo.Host
	return base + "/api/v3/", base + "/api/graphql"
}

// defaultTimeout bounds each HTTP request when ClientOptions.Timeout is zero.
const defaultTimeout = 30 * time.Second

// Client is a forge.Forge for one GitHub repository.
type Client struct {
	repo  forge.Repo
	bot   forge.Signature
	rest  *gh.Client
	gql   *githubv4.Client
	tr    *forge.Transport
	fails *failRecorder
	// repoNodeID is the repository's GraphQL ID (read once, for updateRefs).
	repoNodeID string
	// native: commits name no author or committer (forge.ClientOptions.NativeCommits).
	native bool
}

var _ forge.Forge = (*Client)(nil)

// New returns a Client authenticating with a token.
func New(o forge.ClientOptions) (*Client, error) {
	fails := &failRecorder{base: o.Transport}
	if fails.base == nil {
		fails.base = http.DefaultTransport
	}
	o.Transport = fails
	hc, tr, err := forge.HTTPClient(o, defaultTimeout, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+o.Token) })
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	rest, gql := endpoints(o.Repo)
	opts := []gh.ClientOptionsFunc{gh.WithHTTPClient(hc), gh.WithDisableRateLimitCheck()}
	if o.Repo.Host != "github.com" {
		opts = append(opts, gh.WithEnterpriseURLs(rest, rest))
	}
	c, err := gh.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("github client for %s: %w", o.Repo.Host, err)
	}
	return &Client{repo: o.Repo, bot: o.Bot, rest: c, gql: githubv4.NewEnterpriseClient(gql, hc), tr: tr, fails: fails, native: o.NativeCommits}, nil
}

// failRecorder remembers the last failed answer: its status and headers, and for
// GraphQL its body's message and errors' types. githubv4 drops them (a non-200
// becomes a string, errors[].type is not decoded), and classifying needs them.
type failRecorder struct {
	base http.RoundTripper

	mu       sync.Mutex
	lastFail *answer
}

// answer is what a failed answer said, in GitHub's documented signals. No headers
// of the request; the message is GitHub's.
type answer struct {
	status  int
	header  http.Header
	message string
	// types are the GraphQL errors' types (RATE_LIMITED, NOT_FOUND, ...); "" for an
	// error without one.
	types []string
}

func (t *failRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	graphQL := strings.HasSuffix(r.URL.Path, "/graphql")
	if resp.StatusCode < 300 && !graphQL {
		return resp, nil
	}
	a := &answer{status: resp.StatusCode, header: resp.Header.Clone()}
	if graphQL {
		// Read whole (nudgeflow's GraphQL answers are small) and handed on unchanged.
		body, rerr := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if rerr != nil {
			return nil, fmt.Errorf("reading the GraphQL answer: %w", rerr)
		}
		var out struct {
			Message string `json:"message"`
			Errors  []struct {
				Type string `json:"type"`
			} `json:"errors"`
		}
		if json.Unmarshal(body, &out) == nil {
			a.message = out.Message
			for _, e := range out.Errors {
				a.types = append(a.types, e.Type)
			}
		}
		if resp.StatusCode < 300 && len(a.types) == 0 {
			return resp, nil
		}
	}
	t.mu.Lock()
	t.lastFail = a
	t.mu.Unlock()
	return resp, nil
}

func (t *failRecorder) takeFail() *answer {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.lastFail
	t.lastFail = nil
	return f
}

// Writes counts write requests (POST, PATCH, PUT, DELETE), GraphQL mutations included.
func (c *Client) Writes() int { return c.tr.Writes() }

// Bot is the commit identity.
func (c *Client) Bot() forge.Signature { return c.bot }

func (c *Client) DefaultBranch(ctx context.Context) (string, error) {
	r, resp, err := c.rest.Repositories.Get(ctx, c.repo.Owner, c.repo.Name)
	if err != nil {
		return "", classify("reading repository "+c.repo.FullName(), err, resp, nil)
	}
	return r.GetDefaultBranch(), nil
}

func (c *Client) BranchHead(ctx context.Context, branch string) (forge.Commit, bool, error) {
	ref, resp, err := c.rest.Git.GetRef(ctx, c.repo.Owner, c.repo.Name, "heads/"+branch)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return forge.Commit{}, false, nil
		}
		return forge.Commit{}, false, classify("reading branch "+branch, err, resp, nil)
	}
	cm, err := c.Commit(ctx, ref.GetObject().GetSHA())
	return cm, err == nil, err
}

func (c *Client) Commit(ctx context.Context, sha string) (forge.Commit, error) {
	cm, resp, err := c.rest.Git.GetCommit(ctx, c.repo.Owner, c.repo.Name, sha)
	if err != nil {
		return forge.Commit{}, classify("reading commit "+sha, err, resp, nil)
	}
	return toCommit(cm), nil
}

func toCommit(cm *gh.Commit) forge.Commit {
	out := forge.Commit{SHA: cm.GetSHA(), Tree: cm.GetTree().GetSHA(), Message: cm.GetMessage(),
		Author:    forge.Signature{Name: cm.GetAuthor().GetName(), Email: cm.GetAuthor().GetEmail()},
		Committer: forge.Signature{Name: cm.GetCommitter().GetName(), Email: cm.GetCommitter().GetEmail()}}
	for _, p := range cm.Parents {
		out.Parents = append(out.Parents, p.GetSHA())
	}
	return out
}

func (c *Client) Files(ctx context.Context, tree string) ([]forge.File, error) {
	t, resp, err := c.rest.Git.GetTree(ctx, c.repo.Owner, c.repo.Name, tree, true)
	if err != nil {
		return nil, classify("reading tree "+tree, err, resp, nil)
	}
	if t.GetTruncated() {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("tree %s of %s is too large for one listing", tree, c.repo.FullName()), "TreeTruncated", nil)
	}
	var out []forge.File
	for _, e := range t.Entries {
		if e.GetType() == "blob" {
			out = append(out, forge.File{Path: e.GetPath(), Mode: e.GetMode(), SHA: e.GetSHA()})
		}
	}
	return out, nil
}

func (c *Client) Blob(ctx context.Context, sha string) ([]byte, error) {
	b, resp, err := c.rest.Git.GetBlobRaw(ctx, c.repo.Owner, c.repo.Name, sha)
	if err != nil {
		return nil, classify("reading blob "+sha, err, resp, nil)
	}
	return b, nil
}

// Push writes a tree (contents inline: no blob requests) unless p.Tree already holds
// the result, a commit, and moves the branch: three requests, the fewest the Git
// Data API allows. The head is re-read right before the branch moves, the last
// moment a person's commit can still be noticed.
func (c *Client) Push(ctx context.Context, p forge.Push) (forge.Commit, error) {
	tree := p.Tree
	if tree == "" {
		tree = p.Parent.Tree
		if len(p.Files) > 0 {
			var err error
			if tree, err = c.createTree(ctx, p.Parent.Tree, p.Files); err != nil {
				return forge.Commit{}, err
			}
		}
	}
	cm, err := c.createCommit(ctx, tree, []string{p.Parent.SHA}, p.Message)
	if err != nil {
		return forge.Commit{}, err
	}
	if p.Exists {
		if err := c.swapBranch(ctx, p.Branch, p.ExpectedHead, cm.SHA); err != nil {
			return forge.Commit{}, err
		}
		return cm, nil
	}
	if err := c.setBranch(ctx, p.Branch, cm.SHA, false); err != nil {
		return forge.Commit{}, err
	}
	return cm, nil
}

// swapBranch moves an existing branch from expected to sha in one compare-and-swap:
// GraphQL updateRefs with beforeOid (the server refuses the whole update unless the
// ref still points at beforeOid; force allows the non-fast-forward move a fresh
// commit on the base is). A push by a person after nudgeflow's read is never
// overwritten: ErrHeadMoved. REST PATCH git/refs has no expected value (force or
// fast-forward only), so it cannot serve here.
func (c *Client) swapBranch(ctx context.Context, branch, expected, sha string) error {
	if c.repoNodeID == "" {
		r, resp, err := c.rest.Repositories.Get(ctx, c.repo.Owner, c.repo.Name)
		if err != nil {
			return classify("reading "+c.repo.FullName(), err, resp, nil)
		}
		c.repoNodeID = r.GetNodeID()
	}
	var m struct {
		UpdateRefs struct {
			ClientMutationID *string
		} `graphql:"updateRefs(input: $input)"`
	}
	before := githubv4.GitObjectID(expected)
	input := githubv4.UpdateRefsInput{RepositoryID: githubv4.ID(c.repoNodeID), RefUpdates: []githubv4.RefUpdate{{
		Name: githubv4.GitRefname("refs/heads/" + branch), AfterOid: githubv4.GitObjectID(sha),
		BeforeOid: &before, Force: githubv4.NewBoolean(true)}}}
	c.fails.takeFail()
	err := c.gql.Mutate(ctx, &m, input, nil)
	if err == nil {
		return nil
	}
	failed := c.fails.takeFail()
	// The refusal's wording is GitHub's to change: whether the head moved is read.
	if now, ok, rerr := c.BranchHead(ctx, branch); rerr == nil && (!ok || now.SHA != expected) {
		return forge.ErrHeadMoved
	}
	return classify("moving branch "+branch+" to "+sha, err, nil, failed)
}

var (
	_ forge.PRFilesLister = (*Client)(nil)
	_ forge.CommitWriter  = (*Client)(nil)
)

// WriteCommit writes a tree and a commit on parent, moving no branch: two requests.
func (c *Client) WriteCommit(ctx context.Context, parent forge.Commit, files map[string][]byte, message string) (forge.Commit, error) {
	tree := parent.Tree
	if len(files) > 0 {
		var err error
		if tree, err = c.createTree(ctx, parent.Tree, files); err != nil {
			return forge.Commit{}, err
		}
	}
	return c.createCommit(ctx, tree, []string{parent.SHA}, message)
}

// PRFiles lists a pull request's files, 100 a page (GitHub lists at most 3000).
func (c *Client) PRFiles(ctx context.Context, number int) ([]forge.ChangedFile, error) {
	opt := &gh.ListOptions{PerPage: 100}
	var out []forge.ChangedFile
	for {
		files, resp, err := c.rest.PullRequests.ListFiles(ctx, c.repo.Owner, c.repo.Name, number, opt)
		if err != nil {
			return nil, classify(fmt.Sprintf("listing the files of PR #%d", number), err, resp, nil)
		}
		for _, f := range files {
			out = append(out, forge.ChangedFile{Path: f.GetFilename(), PreviousPath: f.GetPreviousFilename(), Status: f.GetStatus()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

// createTree sends contents inline; they must be valid UTF-8 (callers only rewrite text).
func (c *Client) createTree(ctx context.Context, base string, files map[string][]byte) (string, error) {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sortStrings(paths)
	entries := make([]*gh.TreeEntry, 0, len(paths))
	for _, p := range paths {
		if !utf8.Valid(files[p]) {
			return "", temporal.NewNonRetryableApplicationError("file "+p+" is not UTF-8 text", "NotText", nil)
		}
		entries = append(entries, &gh.TreeEntry{Path: new(p), Mode: new("100644"), Type: new("blob"), Content: new(string(files[p]))})
	}
	t, resp, err := c.rest.Git.CreateTree(ctx, c.repo.Owner, c.repo.Name, base, entries)
	if err != nil {
		return "", classify("creating a tree", err, resp, nil)
	}
	return t.GetSHA(), nil
}

func (c *Client) createCommit(ctx context.Context, tree string, parents []string, message string) (forge.Commit, error) {
	in := gh.Commit{Message: &message, Tree: &gh.Tree{SHA: &tree}}
	for _, p := range parents {
		in.Parents = append(in.Parents, &gh.Commit{SHA: new(p)})
	}
	if c.bot.Email != "" && !c.native {
		in.Author = &gh.CommitAuthor{Name: new(c.bot.Name), Email: new(c.bot.Email)}
		in.Committer = in.Author
	}
	cm, resp, err := c.rest.Git.CreateCommit(ctx, c.repo.Owner, c.repo.Name, in, nil)
	if err != nil {
		return forge.Commit{}, classify("creating a commit", err, resp, nil)
	}
	return toCommit(cm), nil
}

func (c *Client) setBranch(ctx context.Context, branch, sha string, exists bool) error {
	var resp *gh.Response
	var err error
	if exists {
		_, resp, err = c.rest.Git.UpdateRef(ctx, c.repo.Owner, c.repo.Name, "heads/"+branch, gh.UpdateRef{SHA: sha, Force: new(true)})
	} else {
		_, resp, err = c.rest.Git.CreateRef(ctx, c.repo.Owner, c.repo.Name, gh.CreateRef{Ref: "refs/heads/" + branch, SHA: sha})
	}
	if err != nil {
		return classify("pointing branch "+branch+" at "+sha, err, resp, nil)
	}
	return nil
}

func toPR(p *gh.PullRequest) forge.PR {
	return forge.PR{Number: p.GetNumber(), NodeID: p.GetNodeID(), URL: p.GetHTMLURL(), Title: p.GetTitle(), Body: p.GetBody(),
		Open: p.GetState() == "open", Merged: p.GetMerged() || p.MergedAt != nil, Draft: p.GetDraft(),
		Head: p.GetHead().GetRef(), HeadSHA: p.GetHead().GetSHA(), Base: p.GetBase().GetRef(),
		MergeCommitSHA: mergeCommit(p), Author: p.GetUser().GetLogin(), Labels: labelNames(p.Labels)}
}

func (c *Client) FindPR(ctx context.Context, branch string, number int) (forge.PR, bool, error) {
	if number > 0 {
		p, resp, err := c.rest.PullRequests.Get(ctx, c.repo.Owner, c.repo.Name, number)
		if err != nil {
			if resp != nil && resp.StatusCode == http.StatusNotFound {
				return forge.PR{}, false, nil
			}
			return forge.PR{}, false, classify(fmt.Sprintf("reading PR #%d", number), err, resp, nil)
		}
		return toPR(p), true, nil
	}
	ps, resp, err := c.rest.PullRequests.List(ctx, c.repo.Owner, c.repo.Name, &gh.PullRequestListOptions{
		State: "open", Head: c.repo.Owner + ":" + branch, Sort: "created", Direction: "desc"})
	if err != nil {
		return forge.PR{}, false, classify("listing PRs of branch "+branch, err, resp, nil)
	}
	if len(ps) == 0 {
		return forge.PR{}, false, nil
	}
	return toPR(ps[0]), true, nil
}

// BranchPRs lists the PRs of branch in every state, newest first (forge.BranchPRLister).
func (c *Client) BranchPRs(ctx context.Context, branch string, max int) ([]forge.PR, error) {
	ps, resp, err := c.rest.PullRequests.List(ctx, c.repo.Owner, c.repo.Name, &gh.PullRequestListOptions{
		State: "all", Head: c.repo.Owner + ":" + branch, Sort: "created", Direction: "desc", ListOptions: gh.ListOptions{PerPage: max}})
	if err != nil {
		return nil, classify("listing PRs of branch "+branch, err, resp, nil)
	}
	out := make([]forge.PR, 0, len(ps))
	for _, p := range ps {
		out = append(out, toPR(p))
	}
	return out, nil
}

func (c *Client) CreatePR(ctx context.Context, in forge.NewPR) (forge.PR, error) {
	p, resp, err := c.rest.PullRequests.Create(ctx, c.repo.Owner, c.repo.Name, gh.CreatePullRequest{
		Title: new(in.Title), Head: in.Head, Base: in.Base, Body: new(in.Body), Draft: new(in.Draft)})
	if err != nil {
		var er *gh.ErrorResponse
		if in.Draft && errors.As(err, &er) && er.Response.StatusCode == http.StatusUnprocessableEntity && mentionsDraftsUnsupported(er) {
			return forge.PR{}, fmt.Errorf("creating a draft PR from %s: %w", in.Head, forge.ErrDraftsUnsupported)
		}
		return forge.PR{}, classify("creating a PR from "+in.Head, err, resp, nil)
	}
	return toPR(p), nil
}

func (c *Client) EditPR(ctx context.Context, number int, body *string, open *bool) (forge.PR, error) {
	in := &gh.PullRequest{Body: body}
	if open != nil {
		in.State = new(map[bool]string{true: "open", false: "closed"}[*open])
	}
	p, resp, err := c.rest.PullRequests.Edit(ctx, c.repo.Owner, c.repo.Name, number, in)
	if err != nil {
		return forge.PR{}, classify(fmt.Sprintf("editing PR #%d", number), err, resp, nil)
	}
	return toPR(p), nil
}

// MarkReady uses GraphQL: REST cannot lift a draft. A new description goes in the
// same document, before the draft is lifted: GraphQL runs a mutation's top-level
// fields in order, so Pipelines as Code sees ready_for_review only after the
// description lost its skip marker, and it costs one request.
func (c *Client) MarkReady(ctx context.Context, pr forge.PR, body *string) error {
	ready := githubv4.MarkPullRequestReadyForReviewInput{PullRequestID: githubv4.ID(pr.NodeID)}
	c.fails.takeFail()
	var err error
	if body == nil {
		var m struct {
			MarkPullRequestReadyForReview struct {
				PullRequest struct{ IsDraft bool }
			} `graphql:"markPullRequestReadyForReview(input: $input)"`
		}
		err = c.gql.Mutate(ctx, &m, ready, nil)
	} else {
		var m struct {
			UpdatePullRequest struct {
				PullRequest struct{ ID githubv4.ID }
			} `graphql:"updatePullRequest(input: $update)"`
			MarkPullRequestReadyForReview struct {
				PullRequest struct{ IsDraft bool }
			} `graphql:"markPullRequestReadyForReview(input: $input)"`
		}
		update := githubv4.UpdatePullRequestInput{PullRequestID: githubv4.ID(pr.NodeID), Body: githubv4.NewString(githubv4.String(*body))}
		err = c.gql.Mutate(ctx, &m, ready, map[string]any{"update": update})
	}
	if err != nil {
		return classify(fmt.Sprintf("marking PR #%d ready for review", pr.Number), err, nil, c.fails.takeFail())
	}
	return nil
}

func (c *Client) Comments(ctx context.Context, number int) ([]forge.Comment, error) {
	var out []forge.Comment
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		cs, resp, err := c.rest.Issues.ListComments(ctx, c.repo.Owner, c.repo.Name, number, opts)
		if err != nil {
			return nil, classify(fmt.Sprintf("listing comments of PR #%d", number), err, resp, nil)
		}
		for _, cm := range cs {
			out = append(out, forge.Comment{ID: cm.GetID(), Body: cm.GetBody()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func (c *Client) CreateComment(ctx context.Context, number int, body string) error {
	_, resp, err := c.rest.Issues.CreateComment(ctx, c.repo.Owner, c.repo.Name, number, gh.IssueCommentRequest{Body: body})
	if err != nil {
		return classify(fmt.Sprintf("commenting on PR #%d", number), err, resp, nil)
	}
	return nil
}

// CIReports reads the commit's check runs (the newest of each name) and its
// combined status (the newest status of each context), 100 a page, every page.
// A GitHub App without the checks permission is refused the check runs (403, not
// a rate limit): then the statuses alone answer, as they do for Pipelines as Code
// running with a token.
func (c *Client) CIReports(ctx context.Context, sha string) ([]forge.CIReport, error) {
	var out []forge.CIReport
	copt := &gh.ListCheckRunsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		res, resp, err := c.rest.Checks.ListCheckRunsForRef(ctx, c.repo.Owner, c.repo.Name, sha, copt)
		var ab *gh.AbuseRateLimitError
		if err != nil && resp != nil && resp.StatusCode == http.StatusForbidden && !errors.As(err, &ab) {
			break
		}
		if err != nil {
			return nil, classify("listing the check runs of "+sha, err, resp, nil)
		}
		for _, cr := range res.CheckRuns {
			state := cr.GetStatus()
			if cr.GetConclusion() != "" {
				state += "/" + cr.GetConclusion()
			}
			out = append(out, forge.CIReport{Kind: forge.CICheckRun, Name: cr.GetName(), State: state,
				Title: cr.GetOutput().GetTitle(), Summary: cr.GetOutput().GetSummary(), Text: cr.GetOutput().GetText()})
		}
		if resp.NextPage == 0 {
			break
		}
		copt.Page = resp.NextPage
	}
	sopt := &gh.ListOptions{PerPage: 100}
	for {
		st, resp, err := c.rest.Repositories.GetCombinedStatus(ctx, c.repo.Owner, c.repo.Name, sha, sopt)
		if err != nil {
			return nil, classify("reading the commit statuses of "+sha, err, resp, nil)
		}
		for _, s := range st.Statuses {
			out = append(out, forge.CIReport{Kind: forge.CIStatus, Name: s.GetContext(), State: s.GetState(), Title: s.GetDescription()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		sopt.Page = resp.NextPage
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func mentionsDraftsUnsupported(er *gh.ErrorResponse) bool {
	if strings.Contains(strings.ToLower(er.Message), "draft pull requests are not supported") {
		return true
	}
	for _, e := range er.Errors {
		if strings.Contains(strings.ToLower(e.Message), "draft pull requests are not supported") {
			return true
		}
	}
	return false
}

// classify turns a GitHub failure into a Temporal error whose message holds the
// operation, the status and GitHub's message, never a request header. It follows
// GitHub's documented signals:
//   - 429, and 403 with Retry-After, X-RateLimit-Remaining 0 or the secondary rate
//     limit's message ("You have exceeded a secondary rate limit"), are rate limits:
//     retryable with NextRetryDelay from Retry-After, else X-RateLimit-Reset, else a
//     minute (GitHub: "wait for at least one minute");
//   - a GraphQL error of type RATE_LIMITED (HTTP 200) is retried after a minute;
//     one of a type that refuses the request (NOT_FOUND, FORBIDDEN, UNPROCESSABLE,
//     ...) is non-retryable, typed "GitHubGraphQL"; any other (no type, an unknown
//     one: GitHub's "Something went wrong while executing your query") is retryable,
//     typed "GitHubGraphQLTransient" (the workflow bounds the outage);
//   - 401 is retryable, typed "Unauthorized" (a rotated token; the workflow bounds it);
//   - other 4xx are non-retryable, typed "GitHub<status>";
//   - 5xx are retryable, typed "GitHub<status>"; network errors are plain (retryable).
func classify(op string, err error, resp *gh.Response, gqlFail *answer) error {
	var status int
	var header http.Header
	msg := ""
	var er *gh.ErrorResponse
	var rl *gh.RateLimitError
	var ab *gh.AbuseRateLimitError
	switch {
	case errors.As(err, &rl):
		status, header, msg = rl.Response.StatusCode, rl.Response.Header, rl.Message
	case errors.As(err, &ab):
		status, header, msg = ab.Response.StatusCode, ab.Response.Header, ab.Message
	case errors.As(err, &er):
		status, header, msg = er.Response.StatusCode, er.Response.Header, er.Message
		for _, e := range er.Errors {
			if e.Message != "" {
				msg += ": " + e.Message
			}
		}
	case resp != nil && resp.Response != nil && resp.StatusCode >= 400:
		status, header = resp.StatusCode, resp.Header
	case gqlFail != nil && gqlFail.status >= 300:
		status, header, msg = gqlFail.status, gqlFail.header, gqlFail.message
	}
	if status == 0 {
		var ne net.Error
		if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s: network: %s", op, safeNetMessage(err))
		}
		text := fmt.Sprintf("%s: %s", op, forge.Truncate(err.Error()))
		switch graphQLErrorKind(gqlFail) {
		case gqlRateLimited:
			// GraphQL's own limit comes as HTTP 200 without headers: wait a minute,
			// as GitHub advises for limits without a reset time.
			return temporal.NewApplicationErrorWithOptions(text, "GitHubRateLimit", temporal.ApplicationErrorOptions{NextRetryDelay: time.Minute})
		case gqlRefused:
			// The request was understood and refused.
			return temporal.NewNonRetryableApplicationError(text, "GitHubGraphQL", nil)
		}
		return temporal.NewApplicationError(text, "GitHubGraphQLTransient")
	}
	text := fmt.Sprintf("%s: GitHub answered %d", op, status)
	if msg != "" {
		text += ": " + forge.Truncate(msg)
	}
	if rl != nil || ab != nil || ((status == http.StatusForbidden || status == http.StatusTooManyRequests) && secondaryLimit(msg)) {
		// A primary or secondary limit: wait as for a 429, even when GitHub sent
		// neither Retry-After nor X-RateLimit-Remaining.
		delay, _ := forge.RateLimitDelay(http.StatusTooManyRequests, header, rateLimitHeaders)
		return temporal.NewApplicationErrorWithOptions(text, "GitHubRateLimit", temporal.ApplicationErrorOptions{NextRetryDelay: delay})
	}
	// A 401 is typically a token rotated under a running group: retried (the
	// workflow bounds how long), with the reason in the group's status.
	return forge.StatusError("GitHub", text, status, header, rateLimitHeaders,
		"(the forge rejected nudgeflow's credentials; check the SCM Secret or GitHub App)")
}

// secondaryLimit reports GitHub's documented message of a secondary rate limit
// (with a 403 or 429: "You have exceeded a secondary rate limit").
func secondaryLimit(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "secondary rate limit")
}

type gqlErrorKind int

const (
	gqlTransient gqlErrorKind = iota
	gqlRateLimited
	gqlRefused
)

// refusingGraphQLTypes are GraphQL error types that refuse the request itself:
// retrying sends the same refused request.
var refusingGraphQLTypes = map[string]bool{
	"NOT_FOUND": true, "FORBIDDEN": true, "UNPROCESSABLE": true, "INSUFFICIENT_SCOPES": true,
	"MAX_NODE_LIMIT_EXCEEDED": true, "INVALID": true, "ARGUMENT_ERROR": true, "BAD_REQUEST": true,
}

// graphQLErrorKind reads a GraphQL answer's errors by type: a rate limit wins, then
// a refusal; no type or an unknown one is transient.
func graphQLErrorKind(a *answer) gqlErrorKind {
	if a == nil {
		return gqlTransient
	}
	kind := gqlTransient
	for _, t := range a.types {
		switch {
		case t == "RATE_LIMITED":
			return gqlRateLimited
		case refusingGraphQLTypes[t]:
			kind = gqlRefused
		}
	}
	return kind
}

// rateLimitHeaders: GitHub's primary limit sends X-RateLimit-Remaining 0 and
// X-RateLimit-Reset (Unix seconds); secondary limits send Retry-After.
var rateLimitHeaders = forge.RateLimitHeaders{Remaining: "X-RateLimit-Remaining", Reset: "X-RateLimit-Reset"}

// safeNetMessage keeps the error's text (URLs and transport errors carry no headers).
func safeNetMessage(err error) string { return forge.Truncate(err.Error()) }

// mergeCommit is the PR's merge commit once merged (GitHub also fills
// merge_commit_sha with a test merge while the PR is open: ignored then).
func mergeCommit(p *gh.PullRequest) string {
	if p.GetMerged() || p.MergedAt != nil {
		return p.GetMergeCommitSHA()
	}
	return ""
}
