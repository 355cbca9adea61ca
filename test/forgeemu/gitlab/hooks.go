package gitlab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

type hook struct{ url, token string }

type delivery struct {
	id, url, token string
	payload        []byte
}

// Delivery is the outcome of one webhook POST.
type Delivery struct {
	ID     string
	URL    string
	Action string
	Status int // 0 when the POST failed
}

// AddWebhook sends every later Merge Request Hook to url with X-Gitlab-Token token.
func (s *Server) AddWebhook(url, token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks = append(s.hooks, hook{url: url, token: token})
}

// Deliveries lists the webhook POSTs made so far, in order.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.delivers...)
}

// queueHook builds a Merge Request Hook payload like GitLab's. Callers hold s.mu.
func (s *Server) queueHook(p *project, m *mergeRequest, action, oldrev string, changes map[string]any, u User) {
	if len(s.hooks) == 0 {
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
	s.nextID++
	id := fmt.Sprintf("00000000-0000-4000-9000-%012d", s.nextID)
	for _, h := range s.hooks {
		s.deliver <- delivery{id: id, url: h.url, token: h.token, payload: payload}
	}
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
				req.Header.Set("User-Agent", "GitLab/emulator")
				req.Header.Set("X-Gitlab-Event", "Merge Request Hook")
				req.Header.Set("X-Gitlab-Event-UUID", d.id)
				req.Header.Set("X-Gitlab-Token", d.token)
				if resp, err := client.Do(req); err == nil {
					status = resp.StatusCode
					_ = resp.Body.Close()
				}
			}
			var p struct {
				ObjectAttributes struct{ Action string } `json:"object_attributes"`
			}
			_ = json.Unmarshal(d.payload, &p)
			s.mu.Lock()
			s.delivers = append(s.delivers, Delivery{ID: d.id, URL: d.url, Action: p.ObjectAttributes.Action, Status: status})
			s.mu.Unlock()
		}
	}
}
