package github

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/nudgeflow/nudgeflow/test/forgeemu/emucore"
)

// Webhooks: the hooks, the queue, the sender and the delivery records are
// emucore's; what a GitHub delivery is (its payloads, headers and signature) is
// this file's and push.go's.

// Delivery is the outcome of one webhook POST.
type Delivery struct {
	ID     string
	URL    string
	Event  string
	Action string
	Status int // 0 when the POST failed
}

// AddWebhook sends every later pull_request event to url, signed with secret.
func (s *Server) AddWebhook(url, secret string) { s.AddWebhookFor(url, secret) }

// AddRepoWebhook sends the later pull_request events of repository repo
// (owner/name) to url, signed with secret: a repository's own webhook.
func (s *Server) AddRepoWebhook(repo, url, secret string) {
	s.hooks.Add(emucore.Hook{URL: url, Secret: secret, Events: []string{EventPullRequest}, Repo: repo})
}

// Deliveries lists the webhook POSTs made so far, in order.
func (s *Server) Deliveries() []Delivery {
	var out []Delivery
	for _, d := range s.hooks.Deliveries() {
		out = append(out, Delivery(d))
	}
	return out
}

// queueHook builds a pull_request payload like GitHub's. Callers hold s.mu.
func (s *Server) queueHook(r *repo, p *pull, action, sender string) {
	// The delivery ID takes a number whenever any hook exists, as it always has:
	// IDs handed out later (and saved) stay where they were.
	if len(s.hooks.All()) == 0 {
		return
	}
	payload, _ := json.Marshal(map[string]any{
		"action": action, "number": p.Number, "pull_request": s.pullJSON(r, p),
		"repository": s.repoJSON(r), "sender": map[string]any{"login": sender},
	})
	s.send(s.hooks.SubscribedFor(EventPullRequest, r.owner+"/"+r.name), EventPullRequest, action, payload)
}

// send queues payload to hooks as one delivery of event, signed per hook.
// Callers hold s.mu.
func (s *Server) send(hooks []emucore.Hook, event, action string, payload []byte) {
	s.nextID++
	id := fmt.Sprintf("00000000-0000-4000-8000-%012d", s.nextID)
	for _, h := range hooks {
		header := http.Header{}
		header.Set("User-Agent", "GitHub-Hookshot/emulator")
		header.Set("X-GitHub-Event", event)
		header.Set("X-GitHub-Delivery", id)
		header.Set("X-Hub-Signature-256", Sign(h.Secret, payload))
		s.hooks.Send(emucore.Post{ID: id, URL: h.URL, Event: event, Action: action, Header: header, Payload: payload})
	}
}

// Sign returns GitHub's X-Hub-Signature-256 value for payload.
func Sign(secret string, payload []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(payload)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}
