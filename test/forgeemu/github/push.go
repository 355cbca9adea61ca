package github

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/nudgeflow/nudgeflow/test/forgeemu/emucore"
	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitstore"
)

// Webhook events a hook subscribes to (GitHub's event names).
const (
	EventPullRequest = "pull_request"
	EventPush        = "push"
)

const zeroSHA = "0000000000000000000000000000000000000000"

// AddWebhookFor sends the later events of the named kinds (EventPullRequest,
// EventPush) to url, signed with secret; AddWebhook subscribes to pull_request only.
func (s *Server) AddWebhookFor(url, secret string, events ...string) {
	if len(events) == 0 {
		events = []string{EventPullRequest}
	}
	s.hooks.Add(emucore.Hook{URL: url, Secret: secret, Events: events})
}

// pushEvent queues GitHub's push event for a branch that moved from before to after
// ("" for none: created or deleted), however it moved: git push, REST or GraphQL ref
// update, a commit through the API, a merge. Callers hold s.mu.
func (s *Server) pushEvent(r *repo, branch, before, after, sender string) {
	subscribed := s.hooks.SubscribedFor(EventPush, r.owner+"/"+r.name)
	if len(subscribed) == 0 || before == after {
		return
	}
	commits := []map[string]any{}
	var headCommit any
	if after != "" {
		// The commits after reaches that before did not (for a new branch: that no
		// other branch did), oldest first, at most 20 as GitHub lists them.
		seen := map[string]bool{}
		if before != "" {
			seen = r.Ancestors(before)
		} else {
			for b, sha := range r.Branches {
				if b != branch {
					maps.Copy(seen, r.Ancestors(sha))
				}
			}
		}
		var chain []*gitstore.Commit
		for q := []string{after}; len(q) > 0 && len(chain) < 20; q = q[1:] {
			c := r.Commits[q[0]]
			if c == nil || seen[c.SHA] {
				continue
			}
			seen[c.SHA] = true
			chain = append(chain, c)
			q = append(q, c.Parents...)
		}
		slices.Reverse(chain)
		for _, c := range chain {
			commits = append(commits, s.pushCommitJSON(r, c))
		}
		if c := r.Commits[after]; c != nil {
			headCommit = s.pushCommitJSON(r, c)
		}
	}
	orZero := func(sha string) string {
		if sha == "" {
			return zeroSHA
		}
		return sha
	}
	forced := before != "" && after != "" && !r.IsAncestor(before, after)
	payload, _ := json.Marshal(map[string]any{
		"ref": "refs/heads/" + branch, "before": orZero(before), "after": orZero(after),
		"created": before == "", "deleted": after == "", "forced": forced, "base_ref": nil,
		"compare":     fmt.Sprintf("%s/%s/%s/compare/%s...%s", s.URL(), r.owner, r.name, orZero(before)[:12], orZero(after)[:12]),
		"commits":     commits,
		"head_commit": headCommit,
		"repository":  s.repoJSON(r), "pusher": map[string]any{"name": sender}, "sender": map[string]any{"login": sender},
	})
	s.send(subscribed, EventPush, "", payload)
}

func (s *Server) pushCommitJSON(r *repo, c *gitstore.Commit) map[string]any {
	return map[string]any{
		"id": c.SHA, "tree_id": c.Tree, "message": c.Message, "timestamp": c.Committer.Date,
		"url":       fmt.Sprintf("%s/%s/%s/commit/%s", s.URL(), r.owner, r.name, c.SHA),
		"author":    map[string]any{"name": c.Author.Name, "email": c.Author.Email},
		"committer": map[string]any{"name": c.Committer.Name, "email": c.Committer.Email},
	}
}
