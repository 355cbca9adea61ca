package github

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

type hook struct {
	url, secret string
	// events are the events it subscribed to (none: pull_request only).
	events []string
}

type delivery struct {
	id, url, secret, event string
	payload                []byte
}

// Delivery is the outcome of one webhook POST.
type Delivery struct {
	ID     string
	URL    string
	Event  string
	Action string
	Status int // 0 when the POST failed
}

// AddWebhook sends every later pull_request event to url, signed with secret.
func (s *Server) AddWebhook(url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks = append(s.hooks, hook{url: url, secret: secret})
}

// Deliveries lists the webhook POSTs made so far, in order.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.delivers...)
}

// queueHook builds a pull_request payload like GitHub's. Callers hold s.mu.
func (s *Server) queueHook(r *repo, p *pull, action, sender string) {
	if len(s.hooks) == 0 {
		return
	}
	payload, _ := json.Marshal(map[string]any{
		"action": action, "number": p.Number, "pull_request": s.pullJSON(r, p),
		"repository": s.repoJSON(r), "sender": map[string]any{"login": sender},
	})
	s.nextID++
	id := fmt.Sprintf("00000000-0000-4000-8000-%012d", s.nextID)
	for _, h := range s.hooks {
		if h.wants(EventPullRequest) {
			s.deliver <- delivery{id: id, url: h.url, secret: h.secret, event: EventPullRequest, payload: payload}
		}
	}
}

// Sign returns GitHub's X-Hub-Signature-256 value for payload.
func Sign(secret string, payload []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(payload)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// deliveryLoop posts webhooks one at a time, in order.
func (s *Server) deliveryLoop() {
	defer s.hookWG.Done()
	client := &http.Client{Timeout: 10 * time.Second}
	for {
		select {
		case <-s.done:
			return
		case d := <-s.deliver:
			status := 0
			req, err := http.NewRequest(http.MethodPost, d.url, bytes.NewReader(d.payload))
			if err == nil {
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("User-Agent", "GitHub-Hookshot/emulator")
				req.Header.Set("X-GitHub-Event", d.event)
				req.Header.Set("X-GitHub-Delivery", d.id)
				req.Header.Set("X-Hub-Signature-256", Sign(d.secret, d.payload))
				if resp, err := client.Do(req); err == nil {
					status = resp.StatusCode
					_ = resp.Body.Close()
				}
			}
			var action struct{ Action string }
			_ = json.Unmarshal(d.payload, &action)
			s.mu.Lock()
			s.delivers = append(s.delivers, Delivery{ID: d.id, URL: d.url, Event: d.event, Action: action.Action, Status: status})
			s.mu.Unlock()
		}
	}
}
