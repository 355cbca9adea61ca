package changegroup_test

import (
	"fmt"
	"strings"
	"testing"

	glemu "github.com/nudgeflow/nudgeflow/internal/forgeemu/gitlab"
	"github.com/nudgeflow/nudgeflow/test/forge/githubemu"
)

// forgeHarness is what the scenarios do on a forge, as a person or as Pipelines as
// Code would. Each forge's emulator gets one implementation (githubForge,
// gitlabForge); a new forge adds one and an entry in startStack's forge list, and
// every test that ranges over shared.forges runs on it.
type forgeHarness interface {
	// Name is the forge in test names and the e2e report ("github", "gitlab").
	Name() string
	// Provider is the Component's git-provider annotation ("" lets the host tell).
	Provider() string
	CreateRepo(owner, name, defaultBranch string, files map[string]string)
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
func (g githubForge) CreateRepo(owner, name, def string, files map[string]string) {
	g.emu.CreateRepo(owner, name, def, files)
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
func (g gitlabForge) CreateRepo(owner, name, def string, files map[string]string) {
	g.emu.CreateProject(owner, name, def, files)
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
