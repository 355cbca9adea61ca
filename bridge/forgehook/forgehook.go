// Package forgehook receives GitHub webhooks: it verifies X-Hub-Signature-256 and turns
// pull_request events into Sink calls. The secret is never logged.
package forgehook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
)

// Event is a pull_request event as nudgeflow needs it.
type Event struct {
	DeliveryID   string
	Action       string
	RepoFullName string
	Number       int
	HeadRef      string
	HeadSHA      string
	Merged       bool
	Draft        bool
	// State is "open" or "closed".
	State string
}

// Sink receives verified events.
type Sink interface {
	PullRequestEvent(ctx context.Context, e Event) error
}

// SecretFunc returns the webhook secret (e.g. read from a Kubernetes Secret).
type SecretFunc func(ctx context.Context) ([]byte, error)

// Handler is the webhook endpoint.
type Handler struct {
	Secret SecretFunc
	Sink   Sink
	Log    *slog.Logger
	// MaxBody bounds the payload (25 MiB, GitHub's cap, when zero).
	MaxBody int64
}

// StaticSecret is a SecretFunc for a configured value.
func StaticSecret(s []byte) SecretFunc {
	return func(context.Context) ([]byte, error) { return s, nil }
}

// ServeHTTP: 401 on a bad signature, 204 for other events, 400 on a malformed
// payload, 202 when the sink accepted the event, 503 when it failed (GitHub redelivers).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := h.Log
	if log == nil {
		log = slog.Default()
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	max := h.MaxBody
	if max == 0 {
		max = 25 << 20
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		http.Error(w, "payload too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	secret, err := h.Secret(r.Context())
	if err != nil || len(secret) == 0 {
		log.Error("webhook secret unavailable", "error", err)
		http.Error(w, "webhook secret unavailable", http.StatusServiceUnavailable)
		return
	}
	if !Valid(secret, body, r.Header.Get("X-Hub-Signature-256")) {
		log.Warn("webhook signature mismatch", "delivery", r.Header.Get("X-GitHub-Delivery"))
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	if r.Header.Get("X-GitHub-Event") != "pull_request" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var p struct {
		Action      string `json:"action"`
		Number      int    `json:"number"`
		PullRequest struct {
			Number int    `json:"number"`
			State  string `json:"state"`
			Draft  bool   `json:"draft"`
			Merged bool   `json:"merged"`
			Head   struct {
				Ref string `json:"ref"`
				SHA string `json:"sha"`
			} `json:"head"`
		} `json:"pull_request"`
		Repository struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(body, &p); err != nil || p.Action == "" || p.Repository.FullName == "" {
		http.Error(w, "malformed pull_request payload", http.StatusBadRequest)
		return
	}
	n := p.Number
	if n == 0 {
		n = p.PullRequest.Number
	}
	e := Event{DeliveryID: r.Header.Get("X-GitHub-Delivery"), Action: p.Action, RepoFullName: p.Repository.FullName,
		Number: n, HeadRef: p.PullRequest.Head.Ref, HeadSHA: p.PullRequest.Head.SHA, Merged: p.PullRequest.Merged,
		Draft: p.PullRequest.Draft, State: p.PullRequest.State}
	if err := h.Sink.PullRequestEvent(r.Context(), e); err != nil {
		log.Error("pull_request event not accepted", "delivery", e.DeliveryID, "repo", e.RepoFullName, "pr", e.Number, "error", err)
		http.Error(w, "not accepted", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// Valid reports whether header is GitHub's sha256 HMAC of body (constant-time).
func Valid(secret, body []byte, header string) bool {
	got, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	sig, err := hex.DecodeString(got)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hmac.Equal(sig, m.Sum(nil))
}
