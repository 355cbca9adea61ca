package github

import (
	"encoding/base64"
	"fmt"
	"time"

	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitstore"
)

// OpenPR is a person proposing a change: a branch created from base's head, one
// commit of files (path -> content) by author on it, and a pull request from it to
// base ("opened" is sent). It returns the PR's number and the branch's head SHA.
func (s *Server) OpenPR(owner, name, branch, base string, author User, files map[string]string, title string) (int, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[owner+"/"+name]
	if r == nil {
		return 0, "", fmt.Errorf("no repository %s/%s", owner, name)
	}
	if _, ok := r.Branches[base]; !ok {
		return 0, "", fmt.Errorf("no branch %s in %s/%s", base, owner, name)
	}
	if _, exists := r.Branches[branch]; exists {
		return 0, "", fmt.Errorf("branch %s exists in %s/%s", branch, owner, name)
	}
	// The commit on base's head, then the new branch at it: one push that creates
	// the branch, as the person's `git push -u` is.
	c, err := r.CommitFiles(&s.clock, base, files, title, gitstore.Signature{Name: author.Name, Email: author.Email})
	if err != nil {
		return 0, "", err
	}
	sha := c.SHA
	s.moveBranch(r, branch, sha, author.Login)
	r.nextNumber++
	p := &pull{Number: r.nextNumber, Title: title, State: "open", Head: branch, Base: base, HeadSHA: sha,
		Author: author.Login, CreatedAt: time.Unix(1700000000+s.clock, 0).UTC()}
	p.NodeID = base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "PR:%s/%s#%d", owner, name, p.Number))
	for len(r.pulls) < p.Number {
		r.pulls = append(r.pulls, nil)
	}
	r.pulls[p.Number-1] = p
	s.event(r, p, "opened", author.Login)
	return p.Number, sha, nil
}

// MergeSHA is the merge commit of a merged PR ("" otherwise).
func (s *Server) MergeSHA(owner, name string, number int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[owner+"/"+name]
	if r == nil || number < 1 || number > len(r.pulls) || r.pulls[number-1] == nil {
		return ""
	}
	return r.pulls[number-1].MergeSHA
}
