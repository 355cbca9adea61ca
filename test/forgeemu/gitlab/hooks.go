package gitlab

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/nudgeflow/nudgeflow/test/forgeemu/emucore"
	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitstore"
)

// Webhooks: the hooks (a hook's token is its emucore Secret), the queue, the
// sender and the delivery records are emucore's; what a GitLab delivery is (its
// payloads and headers) is this file's.

// HookEvent is a webhook trigger, named as GitLab's hook API names it.
type HookEvent string

const (
	// MergeRequestEvents sends Merge Request Hooks.
	MergeRequestEvents HookEvent = "merge_requests_events"
	// PushEvents sends Push Hooks: every branch a git push, the Commits API or a
	// merge moves, created or deletes.
	PushEvents HookEvent = "push_events"
)

// Delivery is the outcome of one webhook POST.
type Delivery struct {
	ID  string
	URL string
	// Event is the X-Gitlab-Event: "Merge Request Hook" or "Push Hook".
	Event string
	// Action is a merge request event's action (open, update, ...); "" for a push.
	Action string
	Status int // 0 when the POST failed
}

// AddWebhook sends every later Merge Request Hook to url with X-Gitlab-Token
// token: a project hook with merge_requests_events only.
func (s *Server) AddWebhook(url, token string) { s.AddWebhookFor(url, token, MergeRequestEvents) }

// AddRepoWebhook sends the later Merge Request Hooks of project path
// (group/name) to url with X-Gitlab-Token token: that project's own hook.
func (s *Server) AddRepoWebhook(path, url, token string) {
	s.hooks.Add(emucore.Hook{URL: url, Secret: token, Events: []string{string(MergeRequestEvents)}, Repo: path})
}

// AddWebhookFor is a hook for the events given, of every project.
func (s *Server) AddWebhookFor(url, token string, events ...HookEvent) {
	names := make([]string, len(events))
	for i, e := range events {
		names[i] = string(e)
	}
	s.hooks.Add(emucore.Hook{URL: url, Secret: token, Events: names})
}

// Deliveries lists the webhook POSTs made so far, in order.
func (s *Server) Deliveries() []Delivery {
	var out []Delivery
	for _, d := range s.hooks.Deliveries() {
		out = append(out, Delivery(d))
	}
	return out
}

// zeroSHA is GitLab's before of a created branch and after of a deleted one.
const zeroSHA = "0000000000000000000000000000000000000000"

// pushHookCommits is how many commits a Push Hook lists (the newest, oldest
// first); total_commits_count counts them all.
const pushHookCommits = 20

// queuePushHook builds a Push Hook payload like GitLab's for branch moving from
// before to after ("" for none). The commits are those after reaches and before
// does not (for a new branch: that the default branch does not). Callers hold s.mu.
func (s *Server) queuePushHook(p *project, branch, before, after string, u User) {
	if len(s.hooks.Subscribed(string(PushEvents))) == 0 {
		return
	}
	var commits []map[string]any
	if after != "" {
		known := map[string]bool{}
		switch {
		case before != "":
			known = p.Repo.Ancestors(before)
		case branch != p.Repo.DefaultBranch && p.Repo.Branches[p.Repo.DefaultBranch] != "":
			known = p.Repo.Ancestors(p.Repo.Branches[p.Repo.DefaultBranch])
		}
		// First parents back from after, then oldest first.
		for sha := after; sha != "" && !known[sha]; {
			c := p.Repo.Commits[sha]
			if c == nil {
				break
			}
			commits = append([]map[string]any{s.pushCommitJSON(p, c)}, commits...)
			sha = ""
			if len(c.Parents) > 0 {
				sha = c.Parents[0]
			}
		}
	}
	total := len(commits)
	if len(commits) > pushHookCommits {
		commits = commits[len(commits)-pushHookCommits:]
	}
	if commits == nil {
		commits = []map[string]any{}
	}
	var checkout any
	if after != "" {
		checkout = after
	}
	orZero := func(sha string) string {
		if sha == "" {
			return zeroSHA
		}
		return sha
	}
	payload, _ := json.Marshal(map[string]any{
		"object_kind": "push", "event_name": "push",
		"before": orZero(before), "after": orZero(after), "ref": "refs/heads/" + branch,
		"ref_protected": branch == p.Repo.DefaultBranch, "checkout_sha": checkout,
		"user_name": u.Name, "user_username": u.Username, "user_email": u.Email,
		"project_id": p.ID, "project": s.projectJSON(p),
		"commits": commits, "total_commits_count": total,
		"repository": map[string]any{"name": p.Path[strings.LastIndex(p.Path, "/")+1:], "url": s.projectURL(p) + ".git",
			"homepage": s.projectURL(p), "git_http_url": s.projectURL(p) + ".git", "visibility_level": 0},
	})
	s.send(p, PushEvents, "Push Hook", "", payload)
}

// pushCommitJSON is one commit of a Push Hook, with the paths it added, changed
// and removed against its first parent.
func (s *Server) pushCommitJSON(p *project, c *gitstore.Commit) map[string]any {
	parent := ""
	if len(c.Parents) > 0 {
		parent = c.Parents[0]
	}
	added, modified, removed := []string{}, []string{}, []string{}
	for _, ch := range p.Repo.Diff(parent, c.SHA) {
		switch {
		case ch.Added:
			added = append(added, ch.Path)
		case ch.Deleted:
			removed = append(removed, ch.Path)
		default:
			modified = append(modified, ch.Path)
		}
	}
	return map[string]any{"id": c.SHA, "message": c.Message, "title": c.Title(), "timestamp": c.Committer.Date,
		"url":    fmt.Sprintf("%s/-/commit/%s", s.projectURL(p), c.SHA),
		"author": map[string]any{"name": c.Author.Name, "email": c.Author.Email},
		"added":  added, "modified": modified, "removed": removed}
}

// send queues payload to every hook that wants event, as one delivery named
// kind in X-Gitlab-Event ("Merge Request Hook", "Push Hook"), with the hook's
// token. Callers hold s.mu.
func (s *Server) send(p *project, event HookEvent, kind, action string, payload []byte) {
	s.nextID++
	id := fmt.Sprintf("00000000-0000-4000-9000-%012d", s.nextID)
	for _, h := range s.hooks.SubscribedFor(string(event), p.Path) {
		header := http.Header{}
		header.Set("User-Agent", "GitLab/emulator")
		header.Set("X-Gitlab-Event", kind)
		header.Set("X-Gitlab-Event-UUID", id)
		header.Set("X-Gitlab-Token", h.Secret)
		s.hooks.Send(emucore.Post{ID: id, URL: h.URL, Event: kind, Action: action, Header: header, Payload: payload})
	}
}

// queueHook builds a Merge Request Hook payload like GitLab's. Callers hold s.mu.
func (s *Server) queueHook(p *project, m *mergeRequest, action, oldrev string, changes map[string]any, u User) {
	if len(s.hooks.Subscribed(string(MergeRequestEvents))) == 0 {
		return
	}
	attrs := s.mrJSON(p, m)
	attrs["action"] = action
	attrs["url"] = s.mrURL(p, m)
	if oldrev != "" {
		attrs["oldrev"] = oldrev
	}
	if c := p.Repo.Commits[m.SHA]; c != nil {
		attrs["last_commit"] = map[string]any{"id": c.SHA, "message": c.Message, "title": c.Title(),
			"url": fmt.Sprintf("%s/-/commit/%s", s.projectURL(p), c.SHA)}
	}
	if changes == nil {
		changes = map[string]any{}
	}
	payload, _ := json.Marshal(map[string]any{
		"object_kind": "merge_request", "event_type": "merge_request",
		"user":    map[string]any{"username": u.Username, "name": u.Name},
		"project": s.projectJSON(p), "object_attributes": attrs, "changes": changes,
	})
	s.send(p, MergeRequestEvents, "Merge Request Hook", action, payload)
}
