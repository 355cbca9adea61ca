package emucore

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Hook is a webhook subscription.
type Hook struct {
	URL string
	// Secret is what the forge authenticates deliveries with: GitHub signs the
	// payload with it, GitLab sends it as X-Gitlab-Token.
	Secret string
	// Events are the forge's names of the events it subscribed to.
	Events []string
	// Repo limits the hook to one repository's events (a repository or project
	// hook, owner/name as the forge names it); "" is every repository's (an
	// organization, App or system hook).
	Repo string
}

// Wants reports whether h subscribed to event.
func (h Hook) Wants(event string) bool { return slices.Contains(h.Events, event) }

// Post is one webhook POST to send: the forge builds the payload and its headers
// (event name, delivery ID, signature or token); Content-Type is always JSON.
type Post struct {
	ID, URL, Event string
	// Action is what Delivery reports of it ("" for an event without one).
	Action  string
	Header  http.Header
	Payload []byte
}

// Delivery is the outcome of one webhook POST.
type Delivery struct {
	ID     string
	URL    string
	Event  string
	Action string
	Status int // 0 when the POST failed
}

// Webhooks holds an emulator's hooks and posts what it queues, one at a time, in
// order, from one goroutine: a receiver sees events in the order they happened.
// A POST is not retried; its outcome is recorded (Deliveries).
type Webhooks struct {
	queue chan Post
	done  chan struct{}
	wg    sync.WaitGroup

	mu        sync.Mutex
	hooks     []Hook
	delivered []Delivery
}

// StartWebhooks starts the sender; Close stops it.
func StartWebhooks() *Webhooks {
	w := &Webhooks{queue: make(chan Post, 1024), done: make(chan struct{})}
	w.wg.Add(1)
	go w.loop()
	return w
}

// Add subscribes h.
func (w *Webhooks) Add(h Hook) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h.Events = append([]string(nil), h.Events...)
	w.hooks = append(w.hooks, h)
}

// SubscribedFor lists the hooks that want event of repository repo, oldest first.
func (w *Webhooks) SubscribedFor(event, repo string) []Hook {
	var out []Hook
	for _, h := range w.Subscribed(event) {
		if h.Repo == "" || strings.EqualFold(h.Repo, repo) {
			out = append(out, h)
		}
	}
	return out
}

// Subscribed lists the hooks that want event, oldest first.
func (w *Webhooks) Subscribed(event string) []Hook {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Hook
	for _, h := range w.hooks {
		if h.Wants(event) {
			out = append(out, h)
		}
	}
	return out
}

// Send queues p. It waits while 1024 posts are already queued.
func (w *Webhooks) Send(p Post) { w.queue <- p }

// Deliveries lists the POSTs made so far, in order.
func (w *Webhooks) Deliveries() []Delivery {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Delivery(nil), w.delivered...)
}

// Close stops the sender and waits for it; posts still queued are dropped.
func (w *Webhooks) Close() {
	close(w.done)
	w.wg.Wait()
}

func (w *Webhooks) loop() {
	defer w.wg.Done()
	client := &http.Client{Timeout: 10 * time.Second}
	for {
		select {
		case <-w.done:
			return
		case p := <-w.queue:
			status := 0
			req, err := http.NewRequest(http.MethodPost, p.URL, bytes.NewReader(p.Payload))
			if err == nil {
				for k, v := range p.Header {
					req.Header[k] = v
				}
				req.Header.Set("Content-Type", "application/json")
				if resp, err := client.Do(req); err == nil {
					status = resp.StatusCode
					_ = resp.Body.Close()
				}
			}
			w.mu.Lock()
			w.delivered = append(w.delivered, Delivery{ID: p.ID, URL: p.URL, Event: p.Event, Action: p.Action, Status: status})
			w.mu.Unlock()
		}
	}
}

// All lists every hook, oldest first.
func (w *Webhooks) All() []Hook {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Hook(nil), w.hooks...)
}
