package changegroup_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nudgeflow/nudgeflow/test/forgeemu/faultproxy"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	glemu "github.com/nudgeflow/nudgeflow/test/forgeemu/gitlab"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// forgeHarness is what the scenarios do on a forge, as a person or as Pipelines as
// Code would. Each forge's emulator gets one implementation (githubForge,
// gitlabForge); a new forge adds one and an entry in startStack's forge list, and
// every test that ranges over shared.forges runs on it.
type forgeHarness interface {
	// Name is the forge in test names and the e2e report ("github", "gitlab",
	// "forgejo").
	Name() string
	// Provider is the Component's git-provider annotation ("" lets the host tell).
	Provider() string
	// Token is the bot's access token, the password of the namespace's SCM Secret
	// (the emulators accept forgeToken; a real server issues its own).
	Token() string
	CreateRepo(owner, name, defaultBranch string, files map[string]string)
	// CreateLabel creates a label on owner/name, as a Konflux tenant creates the
	// labels its Renovate config applies (Renovate applies only labels that exist).
	CreateLabel(owner, name, label string)
	RepoURL(owner, name string) string
	// PRURL is the web URL of PR n, as the group's status names it.
	PRURL(owner, name string, n int) string
	FileAt(owner, name, ref, path string) (string, bool)
	Head(owner, name, branch string) (harnessCommit, bool)
	PRs(owner, name string) []harnessPR
	PR(owner, name string, n int) (harnessPR, bool)
	// Comments are the people's and nudgeflow's comments (not system notes).
	Comments(owner, name string, n int) []string
	// The rest act as a maintainer in the web UI or with git.
	Merge(owner, name string, n int) error
	Close(owner, name string, n int) error
	MarkReady(owner, name string, n int) error
	EditBody(owner, name string, n int, body string) error
	HumanCommit(owner, name, branch string, author person, files map[string]string, message string) (string, error)
	// CIBuilds counts the builds Pipelines as Code would have started.
	CIBuilds(owner, name string) int
	// FailNextFor rate-limits the next n API requests about owner's repositories.
	FailNextFor(owner string, n, status, retryAfter int)
}

type person struct{ Login, Name, Email string }

type harnessCommit struct{ SHA, Message, AuthorEmail string }

// harnessPR is a PR or merge request; Head is its source branch.
type harnessPR struct {
	Number         int
	Title, Body    string
	Open, Merged   bool
	Draft          bool
	Head, Base     string
	HeadSHA, State string
}

// eachForge runs fn as a subtest per forge.
func eachForge(t *testing.T, fn func(t *testing.T, f forgeHarness)) {
	for _, f := range shared.forges {
		t.Run(f.Name(), func(t *testing.T) { fn(t, f) })
	}
}

// ---- GitHub ----

type githubForge struct{ emu *githubemu.Server }

func (githubForge) Name() string     { return "github" }
func (githubForge) Provider() string { return "" }
func (githubForge) Token() string    { return forgeToken }
func (g githubForge) CreateRepo(owner, name, def string, files map[string]string) {
	g.emu.CreateRepo(owner, name, def, files)
}
func (g githubForge) CreateLabel(owner, name, label string) {
	must(g.emu.CreateLabel(owner, name, label, "00aabb"))
}
func (g githubForge) RepoURL(owner, name string) string {
	return g.emu.URL() + "/" + owner + "/" + name
}
func (g githubForge) PRURL(owner, name string, n int) string {
	return fmt.Sprintf("%s/%s/%s/pull/%d", g.emu.URL(), owner, name, n)
}
func (g githubForge) FileAt(owner, name, ref, path string) (string, bool) {
	return g.emu.FileAt(owner, name, ref, path)
}
func (g githubForge) Head(owner, name, branch string) (harnessCommit, bool) {
	c, ok := g.emu.Head(owner, name, branch)
	return harnessCommit{SHA: c.SHA, Message: c.Message, AuthorEmail: c.AuthorEmail}, ok
}
func ghPR(p githubemu.PR) harnessPR {
	return harnessPR{Number: p.Number, Title: p.Title, Body: p.Body, Open: p.State == "open", Merged: p.Merged, Draft: p.Draft,
		Head: p.Head, Base: p.Base, HeadSHA: p.HeadSHA, State: p.State}
}
func (g githubForge) PRs(owner, name string) []harnessPR {
	var out []harnessPR
	for _, p := range g.emu.PRs(owner, name) {
		out = append(out, ghPR(p))
	}
	return out
}
func (g githubForge) PR(owner, name string, n int) (harnessPR, bool) {
	p, ok := g.emu.PR(owner, name, n)
	return ghPR(p), ok
}
func (g githubForge) Comments(owner, name string, n int) []string {
	return g.emu.Comments(owner, name, n)
}
func (g githubForge) Merge(owner, name string, n int) error { return g.emu.MergePR(owner, name, n) }
func (g githubForge) Close(owner, name string, n int) error { return g.emu.ClosePR(owner, name, n) }
func (g githubForge) MarkReady(owner, name string, n int) error {
	return g.emu.MarkReady(owner, name, n)
}
func (g githubForge) EditBody(owner, name string, n int, body string) error {
	return g.emu.EditBody(owner, name, n, body)
}
func (g githubForge) HumanCommit(owner, name, branch string, a person, files map[string]string, msg string) (string, error) {
	return g.emu.HumanCommit(owner, name, branch, githubemu.User{Login: a.Login, Name: a.Name, Email: a.Email}, files, msg)
}
func (g githubForge) CIBuilds(owner, name string) int { return g.emu.CIBuilds(owner, name) }
func (g githubForge) FailNextFor(owner string, n, status, retryAfter int) {
	g.emu.FailNextFor(owner, n, status, retryAfter)
}

// ---- GitLab ----

type gitlabForge struct{ emu *glemu.Server }

func (gitlabForge) Name() string     { return "gitlab" }
func (gitlabForge) Provider() string { return "gitlab" }
func (gitlabForge) Token() string    { return forgeToken }
func (g gitlabForge) CreateRepo(owner, name, def string, files map[string]string) {
	g.emu.CreateProject(owner, name, def, files)
}
func (g gitlabForge) CreateLabel(owner, name, label string) {
	must(g.emu.CreateLabel(owner, name, label, "#00aabb"))
}
func (g gitlabForge) RepoURL(owner, name string) string {
	return g.emu.URL() + "/" + owner + "/" + name
}
func (g gitlabForge) PRURL(owner, name string, n int) string {
	return fmt.Sprintf("%s/%s/%s/-/merge_requests/%d", g.emu.URL(), owner, name, n)
}
func (g gitlabForge) FileAt(owner, name, ref, path string) (string, bool) {
	return g.emu.FileAt(owner, name, ref, path)
}
func (g gitlabForge) Head(owner, name, branch string) (harnessCommit, bool) {
	c, ok := g.emu.Head(owner, name, branch)
	return harnessCommit{SHA: c.SHA, Message: c.Message, AuthorEmail: c.AuthorEmail}, ok
}
func glMR(m glemu.MR) harnessPR {
	state := map[string]string{"opened": "open", "merged": "closed", "closed": "closed"}[m.State]
	return harnessPR{Number: m.IID, Title: m.Title, Body: m.Description, Open: m.State == "opened", Merged: m.State == "merged",
		Draft: m.Draft, Head: m.Source, Base: m.Target, HeadSHA: m.SHA, State: state}
}
func (g gitlabForge) PRs(owner, name string) []harnessPR {
	var out []harnessPR
	for _, m := range g.emu.MRs(owner, name) {
		out = append(out, glMR(m))
	}
	return out
}
func (g gitlabForge) PR(owner, name string, n int) (harnessPR, bool) {
	m, ok := g.emu.MR(owner, name, n)
	return glMR(m), ok
}
func (g gitlabForge) Comments(owner, name string, n int) []string { return g.emu.Notes(owner, name, n) }
func (g gitlabForge) Merge(owner, name string, n int) error       { return g.emu.MergeMR(owner, name, n) }
func (g gitlabForge) Close(owner, name string, n int) error       { return g.emu.CloseMR(owner, name, n) }
func (g gitlabForge) MarkReady(owner, name string, n int) error {
	return g.emu.MarkReady(owner, name, n)
}
func (g gitlabForge) EditBody(owner, name string, n int, body string) error {
	return g.emu.EditDescription(owner, name, n, body)
}
func (g gitlabForge) HumanCommit(owner, name, branch string, a person, files map[string]string, msg string) (string, error) {
	return g.emu.HumanCommit(owner, name, branch, glemu.User{Username: a.Login, Name: a.Name, Email: a.Email}, files, msg)
}
func (g gitlabForge) CIBuilds(owner, name string) int { return g.emu.CIBuilds(owner, name) }
func (g gitlabForge) FailNextFor(owner string, n, status, retryAfter int) {
	g.emu.FailNextFor(strings.ToLower(owner), n, status, retryAfter)
}

// ---- Forgejo (a real Gitea server) ----

// forgejoForge is the real Gitea server (localenv.StartForgejo, the API Forgejo
// shares), started the first time a test uses it so the tests that do not pay
// nothing. nudgeflow reaches it through faults, a reverse proxy that can inject
// the rate limits a server's front proxy returns (FailNextFor); the harness's own
// reads and a person's actions go to the server directly.
type forgejoForge struct {
	dir    string
	once   sync.Once
	srv    *localenv.Forgejo
	faults *faultproxy.Proxy
	err    error
	// hookURL is the bridge's forge webhook receiver, registered as the server's
	// system webhook so that every repository's PR events reach the groups.
	hookURL string
}

func (g *forgejoForge) server() *localenv.Forgejo {
	g.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // a cold tool build included
		defer cancel()
		if g.srv, g.err = localenv.StartForgejo(ctx, g.dir); g.err == nil {
			if g.faults, g.err = faultproxy.New(g.srv.URL); g.err == nil {
				g.err = g.srv.AddSystemWebhook(g.hookURL, webhookSecret)
			}
		}
	})
	if g.err != nil {
		panic(fmt.Sprintf("starting the Forgejo test server: %v", g.err))
	}
	return g.srv
}

// stop stops the server if a test started it.
func (g *forgejoForge) stop() {
	if g.faults != nil {
		g.faults.Close()
	}
	if g.srv != nil {
		_ = g.srv.Stop()
	}
}

// botToken is the bot's token once the server runs ("" before).
func (g *forgejoForge) botToken() string {
	if g.srv == nil {
		return ""
	}
	return g.srv.BotToken
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

var dashes = regexp.MustCompile(`-{2,}`)

// forgejoOrg is the organisation for a namespace: Gitea's names are at most 40
// characters, without consecutive dashes; longer namespaces keep a hash suffix.
func forgejoOrg(ns string) string {
	o := strings.Trim(dashes.ReplaceAllString(ns, "-"), "-")
	if len(o) > 40 {
		o = fmt.Sprintf("%s-%x", strings.TrimRight(o[:31], "-"), sha256.Sum256([]byte(ns)))[:40]
	}
	return o
}

func (*forgejoForge) Name() string     { return "forgejo" }
func (*forgejoForge) Provider() string { return "forgejo" }
func (g *forgejoForge) Token() string  { return g.server().BotToken }

// CreateRepo also registers the webhook that counts CI builds (WatchCI).
func (g *forgejoForge) CreateRepo(owner, name, def string, files map[string]string) {
	srv := g.server()
	must(srv.CreateRepo(forgejoOrg(owner), name, def, files))
	must(srv.WatchCI(forgejoOrg(owner), name))
}
func (g *forgejoForge) CreateLabel(owner, name, label string) {
	srv := g.server()
	must(srv.API(http.MethodPost, "/repos/"+forgejoOrg(owner)+"/"+name+"/labels", srv.AdminToken,
		map[string]string{"name": label, "color": "#00aabb"}, nil))
}
func (g *forgejoForge) RepoURL(owner, name string) string {
	g.server()
	return g.faults.URL + "/" + forgejoOrg(owner) + "/" + name
}

// PRURL names the proxy: Gitea builds html_url from the host the request named
// (its public URL detection), so the links nudgeflow reads carry the address it uses.
func (g *forgejoForge) PRURL(owner, name string, n int) string {
	g.server()
	return fmt.Sprintf("%s/%s/%s/pulls/%d", g.faults.URL, forgejoOrg(owner), name, n)
}
func (g *forgejoForge) FileAt(owner, name, ref, path string) (string, bool) {
	return g.server().FileAt(forgejoOrg(owner), name, ref, path)
}
func (g *forgejoForge) Head(owner, name, branch string) (harnessCommit, bool) {
	c, ok := g.server().Head(forgejoOrg(owner), name, branch)
	return harnessCommit{SHA: c.SHA, Message: c.Message, AuthorEmail: c.AuthorEmail}, ok
}
func fjPR(p localenv.ForgejoPR) harnessPR {
	return harnessPR{Number: p.Number, Title: p.Title, Body: p.Body, Open: p.State == "open", Merged: p.Merged, Draft: p.Draft,
		Head: p.Head.Ref, Base: p.Base.Ref, HeadSHA: p.Head.SHA, State: p.State}
}

// PRs leaves out the harness's CI barrier PR (see localenv.Forgejo.Settle).
func (g *forgejoForge) PRs(owner, name string) []harnessPR {
	ps, err := g.server().PRs(forgejoOrg(owner), name)
	must(err)
	var out []harnessPR
	for _, p := range ps {
		if p.Head.Ref != localenv.ForgejoCIBarrierBranch {
			out = append(out, fjPR(p))
		}
	}
	return out
}
func (g *forgejoForge) PR(owner, name string, n int) (harnessPR, bool) {
	p, err := g.server().PR(forgejoOrg(owner), name, n)
	return fjPR(p), err == nil
}
func (g *forgejoForge) Comments(owner, name string, n int) []string {
	cs, err := g.server().Comments(forgejoOrg(owner), name, n)
	must(err)
	return cs
}

// Merge is what a maintainer can do: Gitea and Forgejo refuse to merge a
// work-in-progress PR, in the web UI as in the API (405 "Work in progress PRs cannot
// be merged", services/pull/check.go), so a person first removes the WIP: prefix,
// then merges. The server also answers 405 while it checks the PR's mergeability
// after a push, and 409 when a push lands during the merge: those are retried.
func (g *forgejoForge) Merge(owner, name string, n int) error {
	srv, org := g.server(), forgejoOrg(owner)
	if p, err := srv.PR(org, name, n); err != nil {
		return err
	} else if p.Draft {
		if err := srv.MarkReady(org, name, n); err != nil {
			return err
		}
	}
	var merged error
	ok, last := world.Poll(time.Minute, func() (bool, error) {
		err := srv.MergePR(org, name, n)
		var ae *localenv.APIError
		if errors.As(err, &ae) && (ae.Status == http.StatusMethodNotAllowed || ae.Status == http.StatusConflict) {
			return false, err
		}
		merged = err
		return true, nil
	})
	if !ok {
		return fmt.Errorf("merging %s/%s#%d for a minute: %w", org, name, n, last)
	}
	return merged
}
func (g *forgejoForge) Close(owner, name string, n int) error {
	return g.server().ClosePR(forgejoOrg(owner), name, n)
}
func (g *forgejoForge) MarkReady(owner, name string, n int) error {
	return g.server().MarkReady(forgejoOrg(owner), name, n)
}
func (g *forgejoForge) EditBody(owner, name string, n int, body string) error {
	return g.server().EditBody(forgejoOrg(owner), name, n, body)
}
func (g *forgejoForge) HumanCommit(owner, name, branch string, a person, files map[string]string, msg string) (string, error) {
	return g.server().HumanCommitAs(forgejoOrg(owner), name, branch, a.Name, a.Email, files, msg)
}

// CIBuilds counts from the server's own webhooks, by Pipelines as Code's Gitea rules
// (localenv's ciWatcher), after the deliveries settle.
func (g *forgejoForge) CIBuilds(owner, name string) int {
	n, err := g.server().CIBuilds(context.Background(), forgejoOrg(owner), name)
	must(err)
	return n
}
func (g *forgejoForge) FailNextFor(owner string, n, status, retryAfter int) {
	g.server()
	g.faults.FailNextFor(forgejoOrg(owner), n, status, retryAfter)
}
