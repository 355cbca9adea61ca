// Package gitlab is a stateful fake GitLab reachable over real HTTP on 127.0.0.1,
// shipped in the binary for `nudgeflow dev` and used by the tests.
//
// It speaks the REST v4 subset nudgeflow and Renovate use under /api/v4/: the
// user and the version, projects by ID or URL-encoded path (group%2Fproject),
// branches, commits (the Commits API with actions, start_sha and force), the
// recursive tree (paginated), raw blobs, merge requests (drafts by the "Draft:"
// title prefix, read back as `draft` and the legacy `work_in_progress`; labels),
// notes and merges, project labels, issues, commit statuses and the external
// pipeline they live in. It answers with GitLab's status codes (401, 403, 404,
// 405, 409, 400/422), pages with Link and the X-* headers, and, on demand, rate
// limits with RateLimit-* and Retry-After headers.
//
// Every project is a real git repository at GitLab's clone URL,
// http://host/<namespace>/<project>.git (http_url_to_repo), served by the shared
// gitserve: clone, fetch and push with the token as basic-auth password (see
// git.go). A push is what the REST API then shows, and moves merge request heads
// as a REST write does.
//
// It sends Merge Request Hooks (and, to hooks subscribed to push events, Push
// Hooks) with X-Gitlab-Token, and counts CI-triggering events by Pipelines as
// Code's GitLab rules (pkg/provider/gitlab/detect.go): open, reopen, and update
// with oldrev (new commits) start a pipeline unless the head commit message holds
// a skip marker (pkg/adapter/sinker.go, pkg/provider/gitlab/gitlab.go
// GetCommitInfo); an update without oldrev (title, description, draft) never does
// (package pac holds these rules for both emulators). On a project a test
// restricts (RestrictCI) PaC's ACL applies: an untrusted author's merge request
// gets a "Pending approval, waiting for an /ok-to-test" commit status until a
// trusted member's `/ok-to-test` note; PaC's commit statuses, and the external
// pipeline GitLab keeps them in, can be read back through the API.
//
// # What Renovate calls
//
// Recorded (Calls) with the pinned Renovate 39.264, platform gitlab, endpoint
// <emulator>/api/v4/, the build-service-shaped nudge config (gitAuthor set, so
// no GET /user) run by test/plrunner (test/nudges/renovate/gitlab_test.go). A
// run that opens the nudge merge request:
//
//	GET  /api/v4/version                                     initPlatform: draft prefix, description limit
//	GET  /api/v4/projects/{id}                               initRepo: default_branch, merge_method, http_url_to_repo, ...
//	GET  /{namespace}/{project}.git/info/refs                git clone (401 first, then oauth2:<token>)
//	POST /{namespace}/{project}.git/git-upload-pack          clone and fetches
//	GET  /api/v4/projects/{id}/merge_requests                ?per_page=100&scope=created_by_me (its own, all states)
//	POST /{namespace}/{project}.git/git-receive-pack         the branch pushed
//	POST /api/v4/projects/{id}/merge_requests                title, description, labels "a,b", remove_source_branch, squash
//	GET  /api/v4/projects/{id}/merge_requests/{iid}          ?include_diverged_commits_count=1
//	GET  /api/v4/projects/{id}/issues                        ?per_page=100&state=opened&scope=created_by_me
//
// A later run with a newer digest force-pushes the branch and, instead of the
// POST, sends PUT /api/v4/projects/{id}/merge_requests/{iid} (title,
// description).
//
// With the nudge options automerge, platformAutomerge and gitLabIgnoreApprovals
// (recorded the same way), the POST is followed by GET and POST
// merge_requests/{iid}/approval_rules (its zero-approvals rule), GET
// merge_requests/{iid}, PUT merge_requests/{iid}/merge with
// merge_when_pipeline_succeeds (Pipelines as Code's pipeline is running, so the
// merge request stays open, set to merge when it succeeds) and GET
// repository/commits/{sha}/statuses (automerge.go).
//
// Served too, from Renovate's gitlab platform code
// (lib/modules/platform/gitlab/index.ts) for configs the nudge one does not use:
// GET /user (no gitAuthor); GET repository/commits/{sha} (last_pipeline) and POST
// statuses/{sha} (branch status); the merge request notes (list, create, edit,
// delete: ensureComment); issues (create, read, edit, close); PUT
// merge_requests/{iid} add_labels / remove_labels / labels / target_branch; POST
// merge_requests/{iid}/approve (autoApprove). Not served (404):
// repository/files (presets read from the forge), users?username= and
// groups/{id}/members (assignees and reviewers).
//
// What every forge emulator has comes from package emucore, shared with the
// GitHub emulator: the server's lifecycle (New, NewAt, Close, URL, Host) and the
// call log (Calls), the token map (AddToken, RevokeToken), the failure queue,
// FailWrite and the write count (FailNext, FailNextFor, FailWrite, Writes), the
// one-shot BeforeNextCommit, the blob-read counter, the CI runs counted
// (CIBuilds, CIEvents), the webhook sender (AddWebhook, AddWebhookFor,
// Deliveries), the saved-state file (Save, Load) and the git server's setup.
// This package keeps what is GitLab's: the routes and JSON shapes, how a token is
// read (PRIVATE-TOKEN, Authorization: Bearer, basic auth), Reporter's 403 and the
// rack-attack 429, the Merge Request and Push Hook payloads with X-Gitlab-Token,
// and what the saved file holds.
//
// All methods are safe for concurrent use.
package gitlab

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nudgeflow/nudgeflow/internal/pac"
	"github.com/nudgeflow/nudgeflow/test/forgeemu/emucore"
	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitstore"
)

// User is an account a token authenticates as.
type User struct {
	Username string
	Name     string
	Email    string
	// CommitEmail is the user's "commit email" (profile setting): GitLab records it
	// as the committer of every commit it writes for the user (Commits API, web
	// edits, merges), and as the author when none is given. Empty: Email
	// (commit_email_or_default).
	CommitEmail string
	// ReadOnly users (Reporter role) get 403 on every write.
	ReadOnly bool
}

// Server is the emulator.
type Server struct {
	http *emucore.HTTP
	// tokens are the API tokens (emucore): each authenticates as a User.
	tokens *emucore.Tokens[User]

	mu       sync.Mutex
	projects map[string]*project // by lower-case path
	nextID   int64
	clock    int64
	// faults are the failures a test armed (FailNext, FailWrite) and the write count.
	faults emucore.Faults
	// blobReads counts raw blobs served through the API.
	blobReads emucore.Counter
	// beforeCommit runs once, outside the lock, before the next Commits API request.
	beforeCommit emucore.OneShot
	// hooks are the webhooks and their sender (emucore); payloads are made here
	// (hooks.go).
	hooks *emucore.Webhooks
	// ci are the pipelines PaC started (emucore), in order.
	ci *emucore.CI[CIEvent]

	// calls are the requests answered, logged outside s.mu (git transfers
	// stream without it).
	calls *emucore.Log[Call]

	// git serves the projects over smart HTTP (emucore; git.go).
	git *emucore.Git
}

// CIEvent is one merge request event that started a pipeline by PaC's rules.
type CIEvent struct {
	Project string `json:"project"`
	IID     int    `json:"iid"`
	Action  string `json:"action"`
	HeadSHA string `json:"headSHA"`
}

type project struct {
	ID    int64           `json:"id"`
	Path  string          `json:"path"`
	Repo  *gitstore.Repo  `json:"repo"`
	MRs   []*mergeRequest `json:"mrs"` // index = iid-1
	Notes map[int][]*note `json:"notes"`
	// Statuses are the commit statuses by SHA, oldest first; ACL is who Pipelines
	// as Code trusts (RestrictCI).
	Statuses map[string][]*commitStatus `json:"statuses,omitempty"`
	ACL      pac.ACL                    `json:"acl,omitzero"`
	// Labels are the project's labels, oldest first.
	Labels []*label `json:"labels,omitempty"`
	// Issues by iid-1 (their own sequence).
	Issues []*issue `json:"issues,omitempty"`
}

type mergeRequest struct {
	ID          int64  `json:"id"`
	IID         int    `json:"iid"`
	Title       string `json:"title"`
	Description string `json:"description"`
	State       string `json:"state"` // opened, closed, merged
	Source      string `json:"source"`
	Target      string `json:"target"`
	SHA         string `json:"sha"`
	Author      string `json:"author"`
	MergeCommit string `json:"mergeCommit,omitempty"`
	// SquashCommit is the squash commit of a squash merge.
	SquashCommit string    `json:"squashCommit,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	// Labels are the titles of the labels applied, sorted as GitLab lists them.
	Labels []string `json:"labels,omitempty"`
	// RemoveSource is "Delete source branch when merge request is accepted".
	RemoveSource bool `json:"removeSource,omitempty"`
	// AutoMerge is "merge when the pipeline succeeds", set by AutoMergeBy.
	AutoMerge   bool   `json:"autoMerge,omitempty"`
	AutoMergeBy string `json:"autoMergeBy,omitempty"`
	// ApprovalRules are the merge request's own; ApprovedBy who approved it.
	ApprovalRules []*approvalRule `json:"approvalRules,omitempty"`
	ApprovedBy    []string        `json:"approvedBy,omitempty"`
}

type note struct {
	ID     int64  `json:"id"`
	Body   string `json:"body"`
	Author string `json:"author"`
	System bool   `json:"system"`
}

// draftTitle is GitLab's rule (MergeRequest::DRAFT_REGEX).
var draftTitle = regexp.MustCompile(`(?i)^\s*(\[draft\]|\(draft\)|draft:)\s*`)

func (m *mergeRequest) draft() bool { return draftTitle.MatchString(m.Title) }

// New starts an emulator on 127.0.0.1; Close stops it.
func New() *Server {
	s := newServer()
	s.http = emucore.Serve(s.handler())
	return s
}

// NewAt starts an emulator listening on addr (host:port), for `nudgeflow dev`.
func NewAt(addr string) (*Server, error) {
	s := newServer()
	var err error
	if s.http, err = emucore.ServeAt("GitLab emulator", addr, s.handler()); err != nil {
		s.hooks.Close()
		return nil, err
	}
	return s, nil
}

// handler is everything the emulator serves: git's smart HTTP at the clone URLs,
// the API and the web pages, each request logged (Calls).
func (s *Server) handler() http.Handler {
	return s.recordCalls(s.serveGit(s.routes()))
}

func newServer() *Server {
	s := &Server{tokens: emucore.NewTokens[User](), calls: emucore.NewLog[Call](maxCalls), projects: map[string]*project{}, nextID: 100,
		hooks: emucore.StartWebhooks(), ci: emucore.NewCI(ciRun)}
	s.git = emucore.NewGit(gitForge{s}, "gitlab-emulator-git-")
	return s
}

// Close stops the server and the webhook sender.
func (s *Server) Close() {
	s.http.Close()
	s.hooks.Close()
	s.git.Close()
}

// URL is the web base (http://127.0.0.1:port); projects are URL()/group/project.
func (s *Server) URL() string { return s.http.URL() }

// Host is host:port of the server.
func (s *Server) Host() string { return s.http.Host() }

// APIURL is the REST base: URL()/api/v4/.
func (s *Server) APIURL() string { return s.URL() + "/api/v4/" }

// AddToken lets token authenticate as user.
func (s *Server) AddToken(token string, u User) { s.tokens.Add(token, u) }

// RevokeToken forgets a token (a rotated credential): requests with it get 401.
func (s *Server) RevokeToken(token string) { s.tokens.Revoke(token) }

// FailNext makes the next n API requests fail with status: 429 is GitLab's rate
// limit (RateLimit-Remaining 0, RateLimit-Reset, Retry-After retryAfter seconds,
// body "Retry later"); any other status fails plainly.
func (s *Server) FailNext(n, status, retryAfter int) { s.FailNextFor("", n, status, retryAfter) }

// FailNextFor is FailNext for requests about the projects of one group only (the
// API path holds the URL-encoded project path), so a test's rate limit does not
// land on other tests' traffic.
func (s *Server) FailNextFor(group string, n, status, retryAfter int) {
	scope := ""
	if group != "" {
		scope = "/projects/" + group + "%2F"
	}
	s.faults.FailNext(scope, n, status, retryAfter)
}

// FailNextWrite makes the next n write requests whose (escaped) path contains
// scope fail with status (a refused merge request: scope "/merge_requests"); reads pass.
func (s *Server) FailNextWrite(scope string, n, status int) { s.faults.FailNextWrite(scope, n, status) }

// FailWrite lets `after` more write requests through, then fails the next write.

func (s *Server) FailWrite(after, status int) { s.faults.FailWrite(after, status) }

// BeforeNextCommit runs fn (once) when the next Commits API request arrives,
// before it is handled: a race a test can replay exactly.
func (s *Server) BeforeNextCommit(fn func()) { s.beforeCommit.Arm(fn) }

// Writes is how many authenticated write requests (POST/PUT/DELETE) arrived.
func (s *Server) Writes() int { return s.faults.Writes() }

// BlobReads counts raw blobs served through the API so far.
func (s *Server) BlobReads() int { return s.blobReads.Value() }

// CIBuilds is how many pipelines PaC would have started for the project.
func (s *Server) CIBuilds(group, name string) int {
	// Project paths are case-insensitive on GitLab.
	return s.ci.Count(func(e CIEvent) bool { return strings.EqualFold(e.Project, group+"/"+name) })
}

// CIEvents lists every CI-triggering event so far.
func (s *Server) CIEvents() []CIEvent { return s.ci.Events() }

// ciRun is what a CI event was about, for emucore's counts.
func ciRun(e CIEvent) emucore.Run {
	return emucore.Run{Repo: e.Project, Number: e.IID, HeadSHA: e.HeadSHA}
}

// ---- test helpers ----

// CreateProject creates group/name with one commit holding files on defaultBranch.
func (s *Server) CreateProject(group, name, defaultBranch string, files map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	p := &project{ID: s.nextID, Path: group + "/" + name, Notes: map[int][]*note{},
		Repo: gitstore.New(defaultBranch, files, &s.clock, gitstore.Signature{Name: "Project Owner", Email: "owner@example.com"})}
	s.projects[strings.ToLower(p.Path)] = p
}

// HasProject reports whether group/name exists.
func (s *Server) HasProject(group, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.projects[strings.ToLower(group+"/"+name)] != nil
}

// FileAt returns the content of path at ref (a branch or commit SHA).
func (s *Server) FileAt(group, name, ref, path string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[strings.ToLower(group+"/"+name)]
	if p == nil {
		return "", false
	}
	return p.Repo.FileAt(ref, path)
}

// Commit is a commit as tests see it.
type Commit = gitstore.Summary

// Head returns the commit at the tip of branch.
func (s *Server) Head(group, name, branch string) (Commit, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[strings.ToLower(group+"/"+name)]
	if p == nil {
		return Commit{}, false
	}
	return p.Repo.Head(branch)
}

// MR is a merge request as tests see it.
type MR struct {
	IID         int
	Title       string
	Description string
	// State is opened, closed or merged.
	State  string
	Draft  bool
	Source string
	Target string
	SHA    string
	WebURL string
	// Author is the username that opened it; Labels the titles applied.
	Author string
	Labels []string
}

func (s *Server) view(p *project, m *mergeRequest) MR {
	return MR{IID: m.IID, Title: m.Title, Description: m.Description, State: m.State, Draft: m.draft(),
		Source: m.Source, Target: m.Target, SHA: m.SHA, WebURL: s.mrURL(p, m), Author: m.Author,
		Labels: append([]string(nil), m.Labels...)}
}

// MR returns one merge request.
func (s *Server) MR(group, name string, iid int) (MR, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[strings.ToLower(group+"/"+name)]
	if p == nil || iid < 1 || iid > len(p.MRs) {
		return MR{}, false
	}
	return s.view(p, p.MRs[iid-1]), true
}

// MRs lists the project's merge requests by iid.
func (s *Server) MRs(group, name string) []MR {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []MR
	if p := s.projects[strings.ToLower(group+"/"+name)]; p != nil {
		for _, m := range p.MRs {
			out = append(out, s.view(p, m))
		}
	}
	return out
}

// Notes returns the bodies of a merge request's user notes (not system notes) in order.
func (s *Server) Notes(group, name string, iid int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if p := s.projects[strings.ToLower(group+"/"+name)]; p != nil {
		for _, n := range p.Notes[iid] {
			if !n.System {
				out = append(out, n.Body)
			}
		}
	}
	return out
}

// person is who the helpers act as.
var person = User{Username: "maintainer", Name: "Maintainer", Email: "maintainer@example.com"}

func (s *Server) openMR(group, name string, iid int) (*project, *mergeRequest, error) {
	p := s.projects[strings.ToLower(group+"/"+name)]
	if p == nil || iid < 1 || iid > len(p.MRs) {
		return nil, nil, fmt.Errorf("no merge request %s/%s!%d", group, name, iid)
	}
	m := p.MRs[iid-1]
	if m.State != "opened" {
		return nil, nil, fmt.Errorf("merge request %s/%s!%d is %s", group, name, iid, m.State)
	}
	return p, m, nil
}

// MergeMR merges an open merge request as a person (drafts too: a maintainer can
// mark it ready and merge in one go); the target gets a merge commit.
func (s *Server) MergeMR(group, name string, iid int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, m, err := s.openMR(group, name, iid)
	if err != nil {
		return err
	}
	s.merge(p, m, person)
	return nil
}

// SquashMergeMR merges an open merge request as a person with "Squash commits"
// in a project whose merge method is fast-forward: one squash commit of the
// source's changes lands on the target, and GitLab reports it as
// squash_commit_sha while merge_commit_sha stays null.
func (s *Server) SquashMergeMR(group, name string, iid int) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, m, err := s.openMR(group, name, iid)
	if err != nil {
		return "", err
	}
	head := p.Repo.Commits[m.SHA]
	sig := person.commitSig()
	c := p.Repo.NewCommit(&s.clock, head.Tree, []string{p.Repo.Branches[m.Target]}, m.Title, sig, sig)
	s.moveBranch(p, m.Target, c.SHA, person)
	m.State, m.SquashCommit = "merged", c.SHA
	s.event(p, m, "merge", "", nil, person)
	return c.SHA, nil
}

// commitSig is the identity GitLab writes commits with for u: its commit email.
func (u User) commitSig() gitstore.Signature {
	email := u.CommitEmail
	if email == "" {
		email = u.Email
	}
	return gitstore.Signature{Name: u.Name, Email: email}
}

func (s *Server) merge(p *project, m *mergeRequest, u User) {
	head := p.Repo.Commits[m.SHA]
	sig := u.commitSig()
	c := p.Repo.NewCommit(&s.clock, head.Tree, []string{p.Repo.Branches[m.Target], m.SHA},
		fmt.Sprintf("Merge branch '%s' into '%s'\n\nSee merge request %s!%d", m.Source, m.Target, p.Path, m.IID), sig, sig)
	s.moveBranch(p, m.Target, c.SHA, u)
	m.State, m.MergeCommit = "merged", c.SHA
	s.event(p, m, "merge", "", nil, u)
}

// CloseMR closes an open merge request as a person would.
func (s *Server) CloseMR(group, name string, iid int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, m, err := s.openMR(group, name, iid)
	if err != nil {
		return err
	}
	m.State = "closed"
	s.event(p, m, "close", "", nil, person)
	return nil
}

// EditDescription replaces the description as a person would.
func (s *Server) EditDescription(group, name string, iid int, description string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, m, err := s.openMR(group, name, iid)
	if err != nil {
		return err
	}
	s.update(p, m, nil, &description, person)
	return nil
}

// MarkReady lifts the draft as a person does in the web UI ("Mark as ready"): the
// title loses its prefix.
func (s *Server) MarkReady(group, name string, iid int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, m, err := s.openMR(group, name, iid)
	if err != nil {
		return err
	}
	t := m.Title
	for draftTitle.MatchString(t) {
		t = draftTitle.ReplaceAllString(t, "")
	}
	s.update(p, m, &t, nil, person)
	return nil
}

// HumanCommit commits files on top of branch as a person (a git push), moves the
// branch and sends update with oldrev to its open merge requests. It returns the SHA.
func (s *Server) HumanCommit(group, name, branch string, author User, files map[string]string, message string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[strings.ToLower(group+"/"+name)]
	if p == nil {
		return "", fmt.Errorf("no project %s/%s", group, name)
	}
	c, err := p.Repo.CommitFiles(&s.clock, branch, files, message, gitstore.Signature{Name: author.Name, Email: author.Email})
	if err != nil {
		return "", err
	}
	s.moveBranch(p, branch, c.SHA, author)
	return c.SHA, nil
}

// moveBranch points a branch at sha, sends a Push Hook and sends update (with
// oldrev) to the branch's open merge requests: what GitLab does after any write
// to a branch (a git push, the Commits API, a merge). Callers hold s.mu.
func (s *Server) moveBranch(p *project, branch, sha string, u User) {
	old := p.Repo.Branches[branch]
	p.Repo.Branches[branch] = sha
	if old != sha {
		s.queuePushHook(p, branch, old, sha, u)
	}
	for _, m := range p.MRs {
		if m.State == "opened" && m.Source == branch && m.SHA != sha {
			old := m.SHA
			m.SHA = sha
			s.event(p, m, "update", old, nil, u)
		}
	}
}

// update changes title and description; one update event (no oldrev) names the
// changes, and a draft change adds GitLab's system note. Callers hold s.mu.
func (s *Server) update(p *project, m *mergeRequest, title, description *string, u User) {
	s.updateWithLabels(p, m, title, description, nil, u)
}

// updateWithLabels is update that also sets the labels (nil: unchanged); a label
// change is one more entry in the same update event, as GitLab sends it.
func (s *Server) updateWithLabels(p *project, m *mergeRequest, title, description *string, labels []string, u User) {
	changes := map[string]any{}
	if labels != nil {
		if previous, changed := s.setLabels(p, m, labels); changed {
			changes["labels"] = labelChange(p, previous, m.Labels)
		}
	}
	wasDraft := m.draft()
	if title != nil && *title != m.Title {
		changes["title"] = map[string]any{"previous": m.Title, "current": *title}
		m.Title = *title
	}
	if description != nil && *description != m.Description {
		changes["description"] = map[string]any{"previous": m.Description, "current": *description}
		m.Description = *description
	}
	if m.draft() != wasDraft {
		changes["draft"] = map[string]any{"previous": wasDraft, "current": m.draft()}
		text := "marked this merge request as **ready**"
		if m.draft() {
			text = "marked this merge request as **draft**"
		}
		s.addNote(p, m.IID, text, u.Username, true)
	}
	if len(changes) > 0 {
		s.event(p, m, "update", "", changes, u)
	}
}

func (s *Server) addNote(p *project, iid int, body, author string, system bool) *note {
	s.nextID++
	n := &note{ID: s.nextID, Body: body, Author: author, System: system}
	p.Notes[iid] = append(p.Notes[iid], n)
	return n
}

// event lets Pipelines as Code decide by its GitLab rules (package pac: a
// pipeline, a wait for approval, nothing) and queues the webhook. Callers hold s.mu.
func (s *Server) event(p *project, m *mergeRequest, action, oldrev string, changes map[string]any, u User) {
	s.pacEvent(p, m, action, oldrev, u)
	s.queueHook(p, m, action, oldrev, changes, u)
}

// ---- JSON shapes ----

func (s *Server) projectURL(p *project) string { return s.URL() + "/" + p.Path }

func (s *Server) mrURL(p *project, m *mergeRequest) string {
	return fmt.Sprintf("%s/-/merge_requests/%d", s.projectURL(p), m.IID)
}

// projectJSON is GET /projects/:id's shape, with the fields Renovate's initRepo
// reads: archived, mirror, repository_access_level, merge_requests_access_level,
// default_branch, empty_repo, merge_method, squash_option, http_url_to_repo (the
// clone URL) and forked_from_project (absent: no project here is a fork).
func (s *Server) projectJSON(p *project) map[string]any {
	group, name, _ := cutLast(p.Path)
	var defaultBranch any
	if _, ok := p.Repo.Branches[p.Repo.DefaultBranch]; ok {
		defaultBranch = p.Repo.DefaultBranch
	}
	return map[string]any{
		"id": p.ID, "name": name, "path": name, "path_with_namespace": p.Path, "description": "",
		"name_with_namespace": strings.ReplaceAll(p.Path, "/", " / "),
		"namespace":           map[string]any{"full_path": group, "path": group, "kind": "group"},
		"default_branch":      defaultBranch, "empty_repo": defaultBranch == nil,
		"web_url": s.projectURL(p), "http_url_to_repo": s.projectURL(p) + ".git",
		"ssh_url_to_repo": fmt.Sprintf("git@%s:%s.git", strings.Split(s.Host(), ":")[0], p.Path),
		"visibility":      "private", "archived": false, "mirror": false,
		"repository_access_level": "enabled", "merge_requests_access_level": "enabled",
		"merge_method": "merge", "squash_option": "default_off", "remove_source_branch_after_merge": true,
	}
}

func cutLast(path string) (string, string, bool) {
	i := strings.LastIndex(path, "/")
	if i < 0 {
		return "", path, false
	}
	return path[:i], path[i+1:], true
}

func (s *Server) commitJSON(p *project, c *gitstore.Commit) map[string]any {
	parents := append([]string{}, c.Parents...)
	return map[string]any{"id": c.SHA, "short_id": c.SHA[:8], "title": c.Title(), "message": c.Message,
		"author_name": c.Author.Name, "author_email": c.Author.Email, "authored_date": c.Author.Date,
		"committer_name": c.Committer.Name, "committer_email": c.Committer.Email, "committed_date": c.Committer.Date,
		"created_at": c.Committer.Date, "parent_ids": parents, "project_id": p.ID,
		"web_url": fmt.Sprintf("%s/-/commit/%s", s.projectURL(p), c.SHA)}
}

func (s *Server) mrJSON(p *project, m *mergeRequest) map[string]any {
	var mergeSHA, squashSHA any
	if m.MergeCommit != "" {
		mergeSHA = m.MergeCommit
	}
	if m.SquashCommit != "" {
		squashSHA = m.SquashCommit
	}
	labels := append([]string{}, m.Labels...)
	out := map[string]any{"id": m.ID, "iid": m.IID, "project_id": p.ID, "title": m.Title, "description": m.Description,
		"state": m.State, "draft": m.draft(), "work_in_progress": m.draft(), "source_branch": m.Source, "target_branch": m.Target,
		"source_project_id": p.ID, "target_project_id": p.ID, "sha": m.SHA, "merge_commit_sha": mergeSHA, "squash_commit_sha": squashSHA,
		"web_url": s.mrURL(p, m), "author": map[string]any{"username": m.Author}, "labels": labels,
		"assignee": nil, "assignees": []any{}, "reviewers": []any{}, "head_pipeline": nil,
		"force_remove_source_branch": m.RemoveSource, "should_remove_source_branch": nil,
		"created_at": m.CreatedAt.Format(time.RFC3339), "references": map[string]any{"full": fmt.Sprintf("%s!%d", p.Path, m.IID)}}
	s.autoMergeFields(p, m, out)
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeMessage writes GitLab's error shape: {"message": "404 Project Not Found"}.
func writeMessage(w http.ResponseWriter, status int, msg any) {
	writeJSON(w, status, map[string]any{"message": msg})
}

func notFound(w http.ResponseWriter, what string) {
	writeMessage(w, http.StatusNotFound, "404 "+what+" Not Found")
}
