// Package githubemu is a stateful fake GitHub reachable over real HTTP on 127.0.0.1.
//
// It speaks the REST subset nudgeflow uses under /api/v3/ (GitHub Enterprise style, as
// go-github's WithEnterpriseURLs expects) and GraphQL at /api/graphql for the draft
// mutations, answers with GitHub's status codes (401, 404, 422, rate limits on demand),
// sends signed pull_request webhooks, and counts CI-triggering events by Pipelines as
// Code's rules (package pac): opened, synchronize, reopened and ready_for_review start a
// build unless the head commit message holds a skip marker; edited never does. On a
// repository a test restricts (RestrictCI) PaC's ACL applies: an untrusted author's
// pull request waits for `/ok-to-test`, and PaC's reports (commit statuses, or check
// runs with ReportAsApp) can be read back through the API.
//
// It serves the repositories over git's smart HTTP at URL()/owner/name.git (clone_url;
// package gitserve): anyone clones, a token the API accepts pushes (basic auth, the
// token as password), and a push moves branches and pull request heads, with their
// synchronize, exactly as a REST ref update does. Hooks added with AddWebhookFor
// may also take GitHub's push event, sent for every branch move.
//
// Renovate's github platform (the pinned 39.264, endpoint URL()/api/v3/, a personal
// access token) works against it. What one nudge run called, in order, as recorded
// by Requests (test/nudges/renovate TestRenovateOpensTheNudgePROnGitHub):
//
//	HEAD /api/v3/                                   X-GitHub-Enterprise-Version (GHES detection)
//	POST /api/graphql  repository(owner:, name:)    repoInfoQuery: default branch and its oid, merge methods, recent issues
//	GET  /owner/name.git/info/refs, POST git-upload-pack   blobless clone and fetches; the URL is http://<token>@host/…
//	GET  /api/v3/repos/{owner}/{repo}/pulls         ?per_page=100&state=all&sort=updated&direction=desc (its PR cache)
//	POST /owner/name.git/git-receive-pack           push of the branch (--force-with-lease)
//	POST /api/v3/repos/{owner}/{repo}/pulls         the PR
//	POST /api/v3/repos/{owner}/{repo}/issues/{number}/labels   a bare JSON array of names
//	POST /api/graphql  repository { issues(…) }     getIssuesQuery (closing the dependency dashboard: none)
//
// A second run with a newer digest reads the same, force-pushes the branch and
// edits the PR with PATCH /api/v3/repos/{owner}/{repo}/pulls/{number}.
//
// What every forge emulator has comes from package emucore, shared with the
// GitLab emulator: the server's lifecycle (New, NewAt, Close, URL, Host) and the
// request log (Requests), the token map (AddToken, RevokeToken), the failure
// queue, FailWrite and the write count (FailNext, FailNextFor, FailWrite,
// Writes), the one-shot hooks (BeforeNextCommit, BeforeNextBranchMove), the
// blob-read counter, the CI runs counted (CIBuilds, CIBuildsForPR, CIEvents),
// the webhook sender (AddWebhook, AddWebhookFor, Deliveries), the saved-state
// file (Save, Load) and the git server's setup. This package keeps what is
// GitHub's: the routes and JSON shapes, how a token is read (Authorization:
// token/Bearer, basic auth), rate-limit answers, App installation tokens and
// their scopes, GraphQL faults, the pull_request and push payloads and their
// X-Hub-Signature-256, and what the saved file holds.
//
// All methods are safe for concurrent use.
package github

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nudgeflow/nudgeflow/internal/pac"
	"github.com/nudgeflow/nudgeflow/test/forgeemu/emucore"
	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitstore"
)

// User is an account a token authenticates as; commits without an author get it.
type User struct {
	Login string
	Name  string
	Email string
	// Type is GitHub's user type: "User" (or empty) or UserTypeBot.
	Type string
	// ID is the account's id (GET /users/{login}); 0 for a user added without one.
	ID int64
}

// Server is the emulator.
type Server struct {
	http *emucore.HTTP
	// tokens are the API tokens (emucore): each authenticates as a User.
	tokens *emucore.Tokens[User]
	// writeScopes records, per write request, the repositories its token was scoped to.
	writeScopes []string

	mu     sync.Mutex
	repos  map[string]*repo // "owner/name"
	nextID int64
	clock  int64 // logical clock: makes every commit distinct, like git's dates
	// faults are the failures a test armed (FailNext, FailWrite) and the write count.
	faults emucore.Faults
	// gqlRateLimited answers that many GraphQL requests with GitHub's RATE_LIMITED
	// error (HTTP 200, like GitHub).
	gqlRateLimited int
	// gqlFaults answer the next GraphQL requests, one each, before gqlRateLimited.
	gqlFaults []GraphQLFault
	// noDrafts names repositories ("owner/name") whose plan has no draft PRs.
	noDrafts map[string]bool
	// blobReads counts blob contents served through the API.
	blobReads emucore.Counter
	// beforeCommit runs once, outside the lock, before the next commit is created
	// through the API (a person pushing while a client is mid-update).
	beforeCommit emucore.OneShot
	// beforeBranchMove runs once, outside the lock, before the next request that
	// moves a branch through the API (PATCH git/refs, GraphQL updateRefs).
	beforeBranchMove emucore.OneShot
	// hooks are the webhooks and their sender (emucore); payloads and signatures
	// are made here (hooks.go, push.go).
	hooks *emucore.Webhooks
	// ci are the builds PaC started (emucore), in order.
	ci  *emucore.CI[CIEvent]
	app *appConfig
	// git serves the repositories over smart HTTP (emucore; git.go).
	git *emucore.Git
	// requests are "METHOD path" of every request, logged outside s.mu.
	requests *emucore.Log[string]
}

// CIEvent is one event that started a build by PaC's rules.
type CIEvent struct {
	Repo    string
	Number  int
	Action  string
	HeadSHA string
}

// New starts an emulator on 127.0.0.1; Close stops it.
func New() *Server {
	s := newServer()
	s.http = emucore.Serve(s.recordRequests(s.routes()))
	return s
}

// NewAt starts an emulator listening on addr (host:port), for `nudgeflow dev`'s
// fixed, documented port. It fails when the address is taken.
func NewAt(addr string) (*Server, error) {
	s := newServer()
	var err error
	if s.http, err = emucore.ServeAt("GitHub emulator", addr, s.recordRequests(s.routes())); err != nil {
		s.hooks.Close()
		return nil, err
	}
	return s, nil
}

func newServer() *Server {
	s := &Server{
		tokens:   emucore.NewTokens[User](),
		requests: emucore.NewLog[string](maxRecordedRequests),
		repos:    map[string]*repo{},
		nextID:   1000,
		hooks:    emucore.StartWebhooks(),
		ci:       emucore.NewCI(ciRun),
	}
	s.git = emucore.NewGit(gitForge{s}, "githubemu-git-")
	return s
}

// Close stops the server and the webhook sender.
func (s *Server) Close() {
	s.http.Close()
	s.hooks.Close()
	s.git.Close()
}

// URL is the web base (http://127.0.0.1:port); repositories are URL()/owner/name.
func (s *Server) URL() string { return s.http.URL() }

// Host is host:port of the server.
func (s *Server) Host() string { return s.http.Host() }

// APIURL is the REST base, GHE style: URL()/api/v3/.
func (s *Server) APIURL() string { return s.URL() + "/api/v3/" }

// GraphQLURL is the GraphQL endpoint.
func (s *Server) GraphQLURL() string { return s.URL() + "/api/graphql" }

// AddToken lets token authenticate as user.
func (s *Server) AddToken(token string, u User) { s.tokens.Add(token, u) }

// FailNext makes the next n API requests fail with status: 429 (primary rate limit,
// X-RateLimit-Remaining 0) or 403 (secondary rate limit), both with Retry-After
// retryAfter seconds and X-RateLimit-* headers; any other status fails plainly.
func (s *Server) FailNext(n, status, retryAfter int) {
	s.FailNextFor("", n, status, retryAfter)
}

// FailNextFor is FailNext for requests about the repositories of one owner only, so
// a test's rate limit does not land on other tests' traffic.
func (s *Server) FailNextFor(owner string, n, status, retryAfter int) {
	scope := ""
	if owner != "" {
		scope = "/repos/" + owner + "/"
	}
	s.faults.FailNext(scope, n, status, retryAfter)
}

// FailNextWrite makes the next n write requests whose path contains scope fail
// with status (a refused pull request: scope "/pulls"); reads pass.
func (s *Server) FailNextWrite(scope string, n, status int) { s.faults.FailNextWrite(scope, n, status) }

// BlobReads counts blob contents read through the API so far.
func (s *Server) BlobReads() int { return s.blobReads.Value() }

// BeforeNextCommit runs fn (once) when the next API request to create a commit
// arrives, before it is handled: a race a test can replay exactly.
func (s *Server) BeforeNextCommit(fn func()) { s.beforeCommit.Arm(fn) }

// GraphQLFault is how FailGraphQL answers a GraphQL request.
type GraphQLFault int

const (
	// GraphQLSecondaryLimit is GitHub's secondary rate limit as it often comes: 403
	// with the documented message, neither Retry-After nor X-RateLimit-Remaining 0.
	GraphQLSecondaryLimit GraphQLFault = iota + 1
	// GraphQLTransient is HTTP 200 whose only error has no type: GitHub's "Something
	// went wrong while executing your query" (a timeout on its side).
	GraphQLTransient
)

// FailGraphQL makes the next n GraphQL requests fail with fault.
func (s *Server) FailGraphQL(n int, fault GraphQLFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.gqlFaults = append(s.gqlFaults, fault)
	}
}

// ClearGraphQLFaults drops the GraphQL faults no request has met yet.
func (s *Server) ClearGraphQLFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gqlFaults = nil
}

// IsAncestor reports whether commit anc is sha or one of its ancestors in owner/name.
func (s *Server) IsAncestor(owner, name, anc, sha string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[owner+"/"+name]
	return r != nil && r.IsAncestor(anc, sha)
}

// BeforeNextBranchMove runs fn (once) when the next API request that moves a
// branch arrives (REST PATCH git/refs or GraphQL updateRefs), before it is
// handled: a person's push between a client's last read and its write.
func (s *Server) BeforeNextBranchMove(fn func()) { s.beforeBranchMove.Arm(fn) }

// RateLimitGraphQL makes the next n GraphQL requests fail as GitHub does when the
// GraphQL rate limit is exhausted: HTTP 200 with an error of type RATE_LIMITED.
func (s *Server) RateLimitGraphQL(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gqlRateLimited += n
}

// DisallowDrafts makes the repository refuse draft pull requests with GitHub's 422,
// as repositories on plans without drafts do.
func (s *Server) DisallowDrafts(owner, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.noDrafts == nil {
		s.noDrafts = map[string]bool{}
	}
	s.noDrafts[owner+"/"+name] = true
}

// RevokeToken forgets a token (a rotated credential): requests with it get 401.
func (s *Server) RevokeToken(token string) { s.tokens.Revoke(token) }

// FailWrite lets `after` more write requests through, then fails the next write with
// status (a crash or outage in the middle of a multi-step change).
func (s *Server) FailWrite(after, status int) { s.faults.FailWrite(after, status) }

// WriteScopes lists, for each write request, the repositories ("owner/name",
// comma-joined) its token was limited to; "" for an unscoped token.
func (s *Server) WriteScopes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.writeScopes...)
}

// WritesTo lists the write requests ("METHOD path") that named repository
// owner/name: its REST API and git pushes to it, whatever their answer.
func (s *Server) WritesTo(owner, name string) []string {
	var out []string
	for _, line := range s.requests.All() {
		method, path, _ := strings.Cut(line, " ")
		if method == http.MethodGet || method == http.MethodHead {
			continue
		}
		if strings.HasPrefix(path, "/api/v3/repos/"+owner+"/"+name+"/") || path == "/"+owner+"/"+name+"/git-receive-pack" {
			out = append(out, line)
		}
	}
	return out
}

// Writes is how many authenticated write requests (POST/PATCH/PUT/DELETE) arrived.
func (s *Server) Writes() int { return s.faults.Writes() }

// CIBuilds is how many CI builds PaC would have started for the repository.
func (s *Server) CIBuilds(owner, name string) int { return s.ci.ForRepo(owner + "/" + name) }

// CIBuildsForPR is how many CI builds PaC would have started for one PR.
func (s *Server) CIBuildsForPR(owner, name string, number int) int {
	return s.ci.ForRequest(owner+"/"+name, number)
}

// CIEvents lists every CI-triggering event so far.
func (s *Server) CIEvents() []CIEvent { return s.ci.Events() }

// ciRun is what a CI event was about, for emucore's counts.
func ciRun(e CIEvent) emucore.Run {
	return emucore.Run{Repo: e.Repo, Number: e.Number, HeadSHA: e.HeadSHA}
}

// ---- repositories ----

type repo struct {
	id          int64
	owner, name string
	// Repo holds the objects, the default branch and the branches (refs/heads/*).
	*gitstore.Repo
	// otherRefs are the refs outside refs/heads ("tags/v1" -> SHA), which GitHub's
	// git refs API creates too.
	otherRefs  map[string]string
	pulls      []*pull // index = number-1 of PRs; issues share numbers
	nextNumber int
	comments   map[int][]*comment
	// statuses and checks are the commit statuses and check runs by commit SHA,
	// oldest first; acl is who Pipelines as Code trusts, pacApp says it reports as
	// a GitHub App (check runs).
	statuses map[string][]*commitStatus
	checks   map[string][]*checkRun
	acl      pac.ACL
	pacApp   bool
	// labels are the repository's labels, name -> color.
	labels map[string]string
}

// newRepo wraps a store. GitHub reads a directory's tree by its SHA, so every
// subtree is stored too.
func newRepo(id int64, owner, name string, git *gitstore.Repo) *repo {
	git.Init()
	git.Subtrees = true
	git.IndexSubtrees()
	return &repo{id: id, owner: owner, name: name, Repo: git, otherRefs: map[string]string{}, comments: map[int][]*comment{},
		statuses: map[string][]*commitStatus{}, checks: map[string][]*checkRun{}}
}

// ref reads a ref named as GitHub's API does, below refs/ ("heads/main", "tags/v1").
func (r *repo) ref(name string) (string, bool) {
	if branch, ok := strings.CutPrefix(name, "heads/"); ok {
		sha, ok := r.Branches[branch]
		return sha, ok
	}
	sha, ok := r.otherRefs[name]
	return sha, ok
}

// setRef points a ref at sha; moveBranch also tells a branch's pull requests.
func (r *repo) setRef(name, sha string) {
	if branch, ok := strings.CutPrefix(name, "heads/"); ok {
		r.Branches[branch] = sha
	} else {
		r.otherRefs[name] = sha
	}
}

type pull struct {
	Number    int
	NodeID    string
	Title     string
	Body      string
	State     string // open, closed
	Draft     bool
	Merged    bool
	Head      string // branch
	Base      string // branch
	HeadSHA   string
	Author    string
	CreatedAt time.Time
	MergeSHA  string `json:",omitempty"`
	// Labels are the names of the labels on it, in the order they were added.
	Labels []string `json:",omitempty"`
}

type comment struct {
	ID   int64
	Body string
	User string
}

// ---- test helpers ----

// CreateRepo creates owner/name with one commit holding files on defaultBranch.
func (s *Server) CreateRepo(owner, name, defaultBranch string, files map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	git := &gitstore.Repo{DefaultBranch: defaultBranch}
	r := newRepo(s.nextID, owner, name, git)
	sig := gitstore.Signature{Name: "Repo Owner", Email: "owner@example.com"}
	c := r.NewCommit(&s.clock, r.WriteTree("", files), nil, "Initial commit", sig, sig)
	r.Branches[defaultBranch] = c.SHA
	s.repos[owner+"/"+name] = r
}

// FileAt returns the content of path at ref (a branch or commit SHA).
func (s *Server) FileAt(owner, name, ref, path string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[owner+"/"+name]
	if r == nil {
		return "", false
	}
	return r.FileAt(ref, path)
}

// Commit is a commit as tests see it.
type Commit = gitstore.Summary

// CommitOf returns a commit by SHA.
func (s *Server) CommitOf(owner, name, sha string) (Commit, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[owner+"/"+name]
	if r == nil || r.Commits[sha] == nil {
		return Commit{}, false
	}
	c := r.Commits[sha]
	return c.Summary(), true
}

// Head returns the commit at the tip of branch.
func (s *Server) Head(owner, name, branch string) (Commit, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[owner+"/"+name]
	if r == nil {
		return Commit{}, false
	}
	return r.Head(branch)
}

// PR is a pull request as tests see it.
type PR struct {
	Number  int
	NodeID  string
	Title   string
	Body    string
	State   string
	Draft   bool
	Merged  bool
	Head    string
	Base    string
	HeadSHA string
	Labels  []string
}

func (p *pull) view() PR {
	return PR{Number: p.Number, NodeID: p.NodeID, Title: p.Title, Body: p.Body, State: p.State, Draft: p.Draft,
		Merged: p.Merged, Head: p.Head, Base: p.Base, HeadSHA: p.HeadSHA, Labels: append([]string(nil), p.Labels...)}
}

// PR returns one pull request.
func (s *Server) PR(owner, name string, number int) (PR, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[owner+"/"+name]
	if r == nil || number < 1 || number > len(r.pulls) || r.pulls[number-1] == nil {
		return PR{}, false
	}
	return r.pulls[number-1].view(), true
}

// PRs lists the repository's pull requests by number.
func (s *Server) PRs(owner, name string) []PR {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PR
	if r := s.repos[owner+"/"+name]; r != nil {
		for _, p := range r.pulls {
			if p != nil {
				out = append(out, p.view())
			}
		}
	}
	return out
}

// Comments returns the bodies of an issue's or PR's comments in order.
func (s *Server) Comments(owner, name string, number int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if r := s.repos[owner+"/"+name]; r != nil {
		for _, c := range r.comments[number] {
			out = append(out, c.Body)
		}
	}
	return out
}

// MergePR merges an open PR: the base branch gets a merge commit, the PR is closed
// with merged set, and a closed event is sent.
func (s *Server) MergePR(owner, name string, number int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, p, err := s.openPull(owner, name, number)
	if err != nil {
		return err
	}
	s.merge(r, p, gitstore.Signature{Name: "Maintainer", Email: "maintainer@example.com"})
	return nil
}

// merge merges an open PR as sig. Callers hold s.mu.
func (s *Server) merge(r *repo, p *pull, sig gitstore.Signature) string {
	head := r.Commits[p.HeadSHA]
	c := r.NewCommit(&s.clock, head.Tree, []string{r.Branches[p.Base], p.HeadSHA}, fmt.Sprintf("Merge pull request #%d", p.Number), sig, sig)
	s.pushEvent(r, p.Base, r.Branches[p.Base], c.SHA, sig.Name)
	r.Branches[p.Base] = c.SHA
	p.State, p.Merged, p.MergeSHA = "closed", true, c.SHA
	s.event(r, p, "closed", sig.Name)
	return c.SHA
}

// ClosePR closes an open PR as a person would.
func (s *Server) ClosePR(owner, name string, number int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, p, err := s.openPull(owner, name, number)
	if err != nil {
		return err
	}
	p.State = "closed"
	s.event(r, p, "closed", "maintainer")
	return nil
}

// EditBody replaces a PR's description as a person would.
func (s *Server) EditBody(owner, name string, number int, body string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, p, err := s.openPull(owner, name, number)
	if err != nil {
		return err
	}
	p.Body = body
	s.event(r, p, "edited", "maintainer")
	return nil
}

// MarkReady lifts a PR's draft as a person would in the web UI.
func (s *Server) MarkReady(owner, name string, number int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, p, err := s.openPull(owner, name, number)
	if err != nil {
		return err
	}
	s.setDraft(r, p, false, "maintainer")
	return nil
}

// Retarget changes a PR's base branch as a person would in the web UI (creating the
// branch from the default branch's head first when it does not exist); GitHub sends
// edited.
func (s *Server) Retarget(owner, name string, number int, base string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, p, err := s.openPull(owner, name, number)
	if err != nil {
		return err
	}
	if _, ok := r.Branches[base]; !ok {
		r.Branches[base] = r.Branches[r.DefaultBranch]
		s.pushEvent(r, base, "", r.Branches[base], "maintainer")
	}
	p.Base = base
	s.event(r, p, "edited", "maintainer")
	return nil
}

// HumanCommit commits files (path -> content) on top of branch by a person, moves
// the branch and sends synchronize to the PRs of that branch. It returns the SHA.
func (s *Server) HumanCommit(owner, name, branch string, author User, files map[string]string, message string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[owner+"/"+name]
	if r == nil {
		return "", fmt.Errorf("no repository %s/%s", owner, name)
	}
	c, err := r.CommitFiles(&s.clock, branch, files, message, gitstore.Signature{Name: author.Name, Email: author.Email})
	if err != nil {
		return "", err
	}
	s.moveBranch(r, branch, c.SHA, author.Login)
	return c.SHA, nil
}

func (s *Server) openPull(owner, name string, number int) (*repo, *pull, error) {
	r := s.repos[owner+"/"+name]
	if r == nil || number < 1 || number > len(r.pulls) || r.pulls[number-1] == nil {
		return nil, nil, fmt.Errorf("no pull request %s/%s#%d", owner, name, number)
	}
	p := r.pulls[number-1]
	if p.State != "open" {
		return nil, nil, fmt.Errorf("pull request %s/%s#%d is %s", owner, name, number, p.State)
	}
	return r, p, nil
}

// moveBranch points a branch at sha and sends push, and synchronize to its open PRs.
func (s *Server) moveBranch(r *repo, branch, sha, sender string) {
	before := r.Branches[branch]
	r.Branches[branch] = sha
	s.pushEvent(r, branch, before, sha, sender)
	for _, p := range r.pulls {
		if p != nil && p.State == "open" && p.Head == branch && p.HeadSHA != sha {
			p.HeadSHA = sha
			s.event(r, p, "synchronize", sender)
		}
	}
}

func (s *Server) setDraft(r *repo, p *pull, draft bool, sender string) {
	if p.Draft == draft {
		return
	}
	p.Draft = draft
	if draft {
		s.event(r, p, "converted_to_draft", sender)
	} else {
		s.event(r, p, "ready_for_review", sender)
	}
}

// event lets Pipelines as Code decide (package pac: a run, a wait for approval,
// nothing) and queues the webhook. Callers hold s.mu.
func (s *Server) event(r *repo, p *pull, action, sender string) {
	s.pacEvent(r, p, action, sender)
	s.queueHook(r, p, action, sender)
}

func (s *Server) pullJSON(r *repo, p *pull) map[string]any {
	html := fmt.Sprintf("%s/%s/%s/pull/%d", s.URL(), r.owner, r.name, p.Number)
	var mergedAt any
	if p.Merged {
		mergedAt = p.CreatedAt.Add(time.Hour).Format(time.RFC3339)
	}
	return map[string]any{
		"id": int64(p.Number) + r.id*1000, "node_id": p.NodeID, "number": p.Number, "state": p.State,
		"title": p.Title, "body": p.Body, "draft": p.Draft, "merged": p.Merged, "merged_at": mergedAt, "merge_commit_sha": p.MergeSHA,
		"html_url": html, "url": fmt.Sprintf("%srepos/%s/%s/pulls/%d", s.APIURL(), r.owner, r.name, p.Number),
		"user":       map[string]any{"login": p.Author},
		"labels":     s.labelsJSON(r, p.Labels),
		"created_at": p.CreatedAt.Format(time.RFC3339),
		"head": map[string]any{"ref": p.Head, "sha": p.HeadSHA, "label": r.owner + ":" + p.Head,
			"repo": s.repoJSON(r)},
		"base": map[string]any{"ref": p.Base, "sha": r.Branches[p.Base], "label": r.owner + ":" + p.Base,
			"repo": s.repoJSON(r)},
	}
}

func (s *Server) repoJSON(r *repo) map[string]any {
	return map[string]any{
		"id": r.id, "node_id": "R_" + strconv.FormatInt(r.id, 10), "name": r.name,
		"full_name": r.owner + "/" + r.name, "default_branch": r.DefaultBranch, "private": false,
		"owner":     map[string]any{"login": r.owner},
		"html_url":  s.URL() + "/" + r.owner + "/" + r.name,
		"clone_url": s.CloneURL(r.owner, r.name),
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string, errs ...map[string]any) {
	body := map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest", "status": strconv.Itoa(status)}
	if len(errs) > 0 {
		body["errors"] = errs
	}
	writeJSON(w, status, body)
}
