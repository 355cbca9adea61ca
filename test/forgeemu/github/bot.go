package github

import (
	"encoding/base64"
	"fmt"
	"time"

	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitstore"
)

// The writes a scripted bot (test/changegroup's scripted Renovate) makes, in the
// process: what Renovate's platform calls leave on the forge, without the HTTP
// round trips real Renovate pays for (the contract tests run the real one).

// PushBotBranch commits files (path -> content) on base's head by author and
// force-moves branch to that commit (creating it), as Renovate rebuilds its
// branch from the base branch; push and synchronize are sent. It returns the SHA.
func (s *Server) PushBotBranch(owner, name, branch, base string, author User, files map[string]string, message string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[owner+"/"+name]
	if r == nil {
		return "", fmt.Errorf("no repository %s/%s", owner, name)
	}
	if _, ok := r.Branches[base]; !ok {
		return "", fmt.Errorf("no branch %s in %s/%s", base, owner, name)
	}
	c, err := r.CommitFiles(&s.clock, base, files, message, gitstore.Signature{Name: author.Name, Email: author.Email})
	if err != nil {
		return "", err
	}
	s.moveBranch(r, branch, c.SHA, author.Login)
	return c.SHA, nil
}

// DeleteBotBranch deletes branch (Renovate's "Deleting branch due to server error").
func (s *Server) DeleteBotBranch(owner, name, branch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.repos[owner+"/"+name]; r != nil {
		delete(r.Branches, branch)
	}
}

// EnsureBotPR opens a pull request from branch to base by author with title, body
// and labels, or updates the open one of that head (title, body; labels added):
// Renovate's ensurePr. It returns the PR's number and whether it was created.
func (s *Server) EnsureBotPR(owner, name, branch, base string, author User, title, body string, labels []string) (int, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[owner+"/"+name]
	if r == nil {
		return 0, false, fmt.Errorf("no repository %s/%s", owner, name)
	}
	sha, ok := r.Branches[branch]
	if !ok {
		return 0, false, fmt.Errorf("no branch %s in %s/%s", branch, owner, name)
	}
	addLabels := func(p *pull) {
		for _, l := range labels {
			if !contains(p.Labels, l) {
				p.Labels = append(p.Labels, l)
			}
		}
	}
	for _, p := range r.pulls {
		if p != nil && p.State == "open" && p.Head == branch && p.Base == base {
			p.Title, p.Body = title, body
			addLabels(p)
			s.event(r, p, "edited", author.Login)
			return p.Number, false, nil
		}
	}
	r.nextNumber++
	p := &pull{Number: r.nextNumber, Title: title, Body: body, State: "open", Head: branch, Base: base, HeadSHA: sha,
		Author: author.Login, CreatedAt: time.Unix(1700000000+s.clock, 0).UTC()}
	p.NodeID = base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "PR:%s/%s#%d", owner, name, p.Number))
	addLabels(p)
	for len(r.pulls) < p.Number {
		r.pulls = append(r.pulls, nil)
	}
	r.pulls[p.Number-1] = p
	s.event(r, p, "opened", author.Login)
	return p.Number, true, nil
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
