// Package forgehook receives forge webhooks on one endpoint: GitHub's (verified by
// X-Hub-Signature-256), GitLab's (verified by X-Gitlab-Token) and Forgejo's or
// Gitea's (verified by X-Forgejo-Signature or X-Gitea-Signature), and turns pull
// request and merge request events into Sink calls. The secret is never logged.
package forgehook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nudgeflow/nudgeflow/internal/forge/forgejo"
)

// Event is a pull request (GitHub, Forgejo) or merge request (GitLab) event as
// nudgeflow needs it, verified. It is also what the receiver forwards to the bridge
// (bridge/receiverapi), hence the JSON names.
type Event struct {
	// Provider is "github", "gitlab" or "forgejo" (Forgejo and Gitea alike).
	Provider   string `json:"provider"`
	DeliveryID string `json:"deliveryID,omitempty"`
	Action     string `json:"action"`
	// Repo is the repository the verifying secret was chosen for, host/owner/name
	// in lower case (RepoKey). The event is routed by it: URL is a pull request of
	// Repo and RepoFullName its path, or the delivery was refused.
	Repo string `json:"repo"`
	// URL is the PR's web page; it names the host, so events route by host too.
	URL          string `json:"url"`
	RepoFullName string `json:"repoFullName"`
	Number       int    `json:"number"`
	HeadRef      string `json:"headRef,omitempty"`
	HeadSHA      string `json:"headSHA,omitempty"`
	Merged       bool   `json:"merged,omitempty"`
	Draft        bool   `json:"draft,omitempty"`
	// State is "open" or "closed".
	State string `json:"state"`
	// Namespace is set when a secret bound to the repository (RepoSecrets)
	// verified the event: it may reach that namespace's groups only. Empty: the
	// shared secret verified it.
	Namespace string `json:"namespace,omitempty"`
}

// Check reports why e is not one event about one pull request of its repository:
// the receiver refuses such a delivery, and the bridge checks again what the
// receiver forwards.
func (e Event) Check() error {
	if e.Repo == "" || RepoKey("https://"+e.Repo) != e.Repo {
		return fmt.Errorf("the event names no repository (%q)", e.Repo)
	}
	// The name is the URL's path, or its end on a forge served under a path
	// (Gitea's ROOT_URL https://host/gitea/).
	_, path, _ := strings.Cut(e.Repo, "/")
	name := strings.ToLower(e.RepoFullName)
	if name == "" || (path != name && !strings.HasSuffix(path, "/"+name)) {
		return fmt.Errorf("the payload's repository name %q is not its repository %s", e.RepoFullName, e.Repo)
	}
	repo, number, ok := PRRepo(e.URL)
	if !ok || repo != e.Repo {
		return fmt.Errorf("the pull request %q is not one of %s", e.URL, e.Repo)
	}
	if number != e.Number {
		return fmt.Errorf("the pull request %q is not number %d", e.URL, e.Number)
	}
	return nil
}

// BoundSecret is a webhook secret bound to some repositories and one namespace: an
// event about such a repository must be signed with it (the shared secret is then
// refused), and it reaches only that namespace's groups.
type BoundSecret struct {
	Namespace string
	Secret    []byte
}

// RepoSecretsFunc returns the secrets bound to a repository, named
// host/owner/name in lower case (RepoKey); none: the shared secret verifies it.
type RepoSecretsFunc func(ctx context.Context, repo string) ([]BoundSecret, error)

// RepoKey is host/owner/name of a repository's web URL, lower case ("" when the
// URL names none).
func RepoKey(webURL string) string {
	u, err := url.Parse(strings.TrimSpace(webURL))
	if err != nil || u.Host == "" {
		return ""
	}
	path := strings.Trim(strings.TrimSuffix(u.Path, ".git"), "/")
	if path == "" || !strings.Contains(path, "/") {
		return ""
	}
	return strings.ToLower(u.Host + "/" + path)
}

// prSeparators part a pull request's web URL into its repository and number:
// GitLab's merge requests, GitHub's pulls, Gitea's and Forgejo's.
var prSeparators = []string{"/-/merge_requests/", "/pull/", "/pulls/"}

// PRRepo is the repository (RepoKey) and number of a pull request's web URL;
// false when the URL names none.
func PRRepo(prURL string) (repo string, number int, ok bool) {
	u, err := url.Parse(strings.TrimSpace(prURL))
	if err != nil || u.Host == "" {
		return "", 0, false
	}
	path := strings.Trim(u.Path, "/")
	for _, sep := range prSeparators {
		r, num, found := strings.Cut(path, sep)
		if !found || r == "" || strings.Contains(num, "/") {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil || n <= 0 || strconv.Itoa(n) != num {
			return "", 0, false
		}
		if repo = RepoKey(u.Scheme + "://" + u.Host + "/" + r); repo == "" {
			return "", 0, false
		}
		return repo, n, true
	}
	return "", 0, false
}

// Sink receives verified events.
type Sink interface {
	PullRequestEvent(ctx context.Context, e Event) error
}

// SecretFunc returns the webhook secret (e.g. read from a Kubernetes Secret).
type SecretFunc func(ctx context.Context) ([]byte, error)

// DefaultMaxBody bounds a delivery's body when Handler.MaxBody is zero. A GitHub
// pull_request payload is the pull request (its body at most 65,536 characters:
// under 256 KiB as UTF-8), its repository and a few users: tens of KB, a few
// hundred at most; Gitea's and Forgejo's copy GitHub's. A GitLab Merge Request
// Hook carries the description (up to 1,048,576 characters) once, and again in
// changes when it was edited: only a megabyte-long description comes near 2 MiB.
// A larger delivery is refused (413) unread; what it said reaches the group by its
// next poll of the pull request.
const DefaultMaxBody = 2 << 20

// Handler is the webhook endpoint.
type Handler struct {
	// Secret is the shared secret: it verifies deliveries about repositories no
	// secret is bound to.
	Secret SecretFunc
	// RepoSecrets, when set, binds repositories to their own secrets (per tenant):
	// an event naming such a repository verifies only under one of them. It is
	// called for every delivery before the signature is checked, so it must not
	// call anything remote (the receiver's answers from memory).
	RepoSecrets RepoSecretsFunc
	Sink        Sink
	Log         *slog.Logger
	// MaxBody bounds the payload (DefaultMaxBody when zero).
	MaxBody int64
	// MaxConcurrent, when set, bounds the deliveries handled at once: one more is
	// answered 503 at once, unread, never queued. Each of them reads into a buffer
	// of its own, kept for the next (at most MaxBody+1 bytes), so what deliveries
	// hold is bounded by MaxConcurrent × MaxBody and makes no garbage.
	MaxConcurrent int

	slotsOnce sync.Once
	slots     chan *[]byte
}

// StaticSecret is a SecretFunc for a configured value.
func StaticSecret(s []byte) SecretFunc {
	return func(context.Context) ([]byte, error) { return s, nil }
}

// fileSecretTTL is how long FileSecret keeps what it read: a rotated secret is
// used within seconds of the kubelet writing it, and a flood of deliveries reads
// the file once per TTL, not once each.
const fileSecretTTL = 5 * time.Second

// FileSecret reads the secret from path (a mounted Secret's key; a trailing
// newline is dropped), again once it is fileSecretTTL old, so that a rotated
// secret is used without a restart. A file that cannot be read or is empty is an
// error: deliveries are then answered 503, never verified with a stale secret.
func FileSecret(path string) SecretFunc {
	var (
		mu     sync.Mutex
		value  []byte
		readAt time.Time
	)
	return func(context.Context) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if value != nil && time.Since(readAt) < fileSecretTTL {
			return value, nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			value = nil
			return nil, fmt.Errorf("reading the webhook secret: %w", err)
		}
		raw = bytes.TrimRight(raw, "\r\n")
		if len(raw) == 0 {
			value = nil
			return nil, fmt.Errorf("the webhook secret file %s is empty", path)
		}
		value, readAt = raw, time.Now()
		return value, nil
	}
}

// ServeHTTP: 413 on a body over MaxBody, 401 on a bad signature or token, 204 for
// other events, 400 on a malformed payload, 403 on a payload whose pull request is
// not one of its repository's (the repository chose the secret: an event is
// routed by the repository its secret verifies), 202 when the sink accepted the
// event, 503 when it failed (the forge redelivers) or no secret can be read.
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
		max = DefaultMaxBody
	}
	var buf *[]byte
	if h.MaxConcurrent > 0 {
		h.slotsOnce.Do(func() {
			h.slots = make(chan *[]byte, h.MaxConcurrent)
			for range h.MaxConcurrent {
				h.slots <- new([]byte)
			}
		})
		select {
		case buf = <-h.slots:
			defer func() { h.slots <- buf }()
		default:
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Connection", "close")
			http.Error(w, "too many deliveries at once", http.StatusServiceUnavailable)
			return
		}
	}
	body, ok := readBody(w, r, max, buf)
	if !ok {
		return
	}
	// Which secrets may sign this delivery: those bound to the repository it names
	// (read, unverified, from the payload: it only selects the candidates), else
	// the shared one. The repository it names is the one the event is routed by.
	var named struct {
		Repository struct {
			HTMLURL string `json:"html_url"`
		} `json:"repository"`
		Project struct {
			WebURL string `json:"web_url"`
		} `json:"project"`
	}
	_ = json.Unmarshal(body, &named)
	gitlab := r.Header.Get("X-Gitlab-Event") != ""
	repo := RepoKey(named.Repository.HTMLURL)
	if gitlab {
		repo = RepoKey(named.Project.WebURL)
	}
	var candidates []BoundSecret
	if h.RepoSecrets != nil && repo != "" {
		bound, err := h.RepoSecrets(r.Context(), repo)
		if err != nil {
			log.Error("repository webhook secrets unavailable", "error", err)
			http.Error(w, "webhook secret unavailable", http.StatusServiceUnavailable)
			return
		}
		candidates = bound
	}
	if len(candidates) == 0 {
		secret, err := h.Secret(r.Context())
		if err != nil || len(secret) == 0 {
			log.Error("webhook secret unavailable", "error", err)
			http.Error(w, "webhook secret unavailable", http.StatusServiceUnavailable)
			return
		}
		candidates = []BoundSecret{{Secret: secret}}
	}
	verify := func(check func(secret []byte) bool) (namespace string, ok bool) {
		for _, c := range candidates {
			if len(c.Secret) > 0 && check(c.Secret) {
				return c.Namespace, true
			}
		}
		return "", false
	}
	if gitlab {
		ns, ok := verify(func(secret []byte) bool { return ValidToken(secret, r.Header.Get("X-Gitlab-Token")) })
		h.serveGitLab(w, r, body, delivery{provider: "gitlab", id: r.Header.Get("X-Gitlab-Event-UUID"),
			event: r.Header.Get("X-Gitlab-Event"), signed: ok, namespace: ns, repo: repo}, log)
		return
	}
	// Gitea and Forgejo also send GitHub's headers (X-GitHub-Event,
	// X-Hub-Signature-256) so that GitHub receivers work; their own headers are
	// checked first, so such a delivery is Forgejo's and its draft read from the title.
	var d delivery
	if ev := forgejoHeader(r, "Event"); ev != "" {
		// Forgejo's signature is the hex HMAC-SHA256 of the body without GitHub's
		// "sha256=" (services/webhook/deliver.go).
		d = delivery{provider: "forgejo", id: forgejoHeader(r, "Delivery"), event: ev}
		d.namespace, d.signed = verify(func(secret []byte) bool { return validHex(secret, body, forgejoHeader(r, "Signature")) })
	} else {
		d = delivery{provider: "github", id: r.Header.Get("X-GitHub-Delivery"), event: r.Header.Get("X-GitHub-Event")}
		d.namespace, d.signed = verify(func(secret []byte) bool { return Valid(secret, body, r.Header.Get("X-Hub-Signature-256")) })
	}
	d.repo = repo
	h.servePullRequest(w, r, body, d, log)
}

// readBody reads r's body, at most limit bytes, answering 413 (and false) when it
// is longer: at once, unread, when its Content-Length says so. It reads into *buf
// when buf is set (growing it, and leaving it grown for the next request), else
// into a buffer of its own; either grows with what arrives, never past limit+1
// bytes, so a client that announces nothing holds no more memory than one that
// announces the limit. The body returned is valid until buf is used again.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, buf *[]byte) ([]byte, bool) {
	tooLarge := func() ([]byte, bool) {
		w.Header().Set("Connection", "close")
		http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
		return nil, false
	}
	if r.ContentLength > limit {
		return tooLarge()
	}
	if buf == nil {
		buf = new([]byte)
	}
	b := (*buf)[:0]
	if want := r.ContentLength + 1; r.ContentLength >= 0 && int64(cap(b)) < want {
		b = make([]byte, 0, want) // +1: room for the read that sees EOF
	}
	defer func() { *buf = b[:0] }()
	src := io.LimitReader(r.Body, limit+1)
	for {
		if len(b) == cap(b) {
			grown := make([]byte, len(b), min(max(2*int64(cap(b)), 32<<10), limit+1))
			copy(grown, b)
			b = grown
		}
		n, err := src.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > limit {
			return tooLarge()
		}
		if errors.Is(err, io.EOF) {
			return b, true
		}
		if err != nil {
			http.Error(w, "payload unreadable", http.StatusBadRequest)
			return nil, false
		}
	}
}

// delivery is what a delivery's headers say, read by its provider's rules.
type delivery struct {
	provider, id, event string
	signed              bool
	// namespace is the namespace of the bound secret that verified it ("": shared).
	namespace string
	// repo is the repository (RepoKey) whose secrets were the candidates.
	repo string
}

// servePullRequest handles a GitHub or Forgejo delivery: only pull_request events
// reach the sink (on Forgejo the family: label, assignment and synchronize events
// are pull_request too, with their own actions). A merge is the action closed with
// merged set on both.
func (h *Handler) servePullRequest(w http.ResponseWriter, r *http.Request, body []byte, d delivery, log *slog.Logger) {
	if !d.signed {
		log.Warn("webhook signature mismatch", "provider", d.provider, "delivery", d.id)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	if d.event != "pull_request" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var p PullRequestPayload
	if err := json.Unmarshal(body, &p); err != nil || p.Action == "" || p.Repository.FullName == "" {
		http.Error(w, "malformed pull_request payload", http.StatusBadRequest)
		return
	}
	n := p.Number
	if n == 0 {
		n = p.PullRequest.Number
	}
	e := Event{Provider: d.provider, DeliveryID: d.id, Action: p.Action, Repo: d.repo, URL: p.PullRequest.HTMLURL, RepoFullName: p.Repository.FullName,
		Number: n, HeadRef: p.PullRequest.Head.Ref, HeadSHA: p.PullRequest.Head.SHA, Merged: p.PullRequest.Merged,
		Draft: p.PullRequest.Draft, State: p.PullRequest.State, Namespace: d.namespace}
	if d.provider == "forgejo" {
		// The server sets draft by its own WORK_IN_PROGRESS_PREFIXES; the title check
		// adds the prefixes the Forgejo forge client counts as drafts, so that the
		// webhook and a poll of the same PR agree.
		e.Draft = e.Draft || forgejo.IsDraftTitle(p.PullRequest.Title)
	}
	h.deliver(w, r, e, log)
}

// PullRequestPayload is a pull_request event's payload as far as nudgeflow reads
// it: GitHub's, which Gitea and Forgejo copy for these fields
// (modules/structs.PullRequestPayload).
type PullRequestPayload struct {
	Action      string `json:"action"`
	Number      int    `json:"number"`
	PullRequest struct {
		Number  int    `json:"number"`
		HTMLURL string `json:"html_url"`
		Title   string `json:"title"`
		State   string `json:"state"`
		Draft   bool   `json:"draft"`
		Merged  bool   `json:"merged"`
		Head    struct {
			Ref string `json:"ref"`
			SHA string `json:"sha"`
		} `json:"head"`
	} `json:"pull_request"`
	Repository struct {
		FullName string `json:"full_name"`
		HTMLURL  string `json:"html_url"`
	} `json:"repository"`
}

// forgejoHeader reads X-Forgejo-<name>, or X-Gitea-<name> (which Forgejo sends too
// and Gitea alone).
func forgejoHeader(r *http.Request, name string) string {
	if v := r.Header.Get("X-Forgejo-" + name); v != "" {
		return v
	}
	return r.Header.Get("X-Gitea-" + name)
}

// deliver hands a verified event to the sink, after refusing (403) one whose pull
// request is not in the repository whose secret verified it: a tenant's secret, or
// the shared one, signs events about its repository only, so a delivery naming
// repository A and pull request B would otherwise reach B's groups.
func (h *Handler) deliver(w http.ResponseWriter, r *http.Request, e Event, log *slog.Logger) {
	if err := e.Check(); err != nil {
		log.Warn("verified webhook refused: its pull request is not its repository's", "delivery", e.DeliveryID,
			"repo", e.Repo, "namespace", e.Namespace, "error", err)
		http.Error(w, "the pull request is not in the repository", http.StatusForbidden)
		return
	}
	if err := h.Sink.PullRequestEvent(r.Context(), e); err != nil {
		log.Error("pull request event not accepted", "delivery", e.DeliveryID, "repo", e.RepoFullName, "pr", e.Number, "error", err)
		http.Error(w, "not accepted", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// serveGitLab handles a GitLab webhook: the X-Gitlab-Token must equal the secret
// (compared in constant time), and only Merge Request Hooks reach the sink.
// GitLab's states map to GitHub's: opened is open; closed and merged are closed,
// merged also Merged.
func (h *Handler) serveGitLab(w http.ResponseWriter, r *http.Request, body []byte, d delivery, log *slog.Logger) {
	if !d.signed {
		log.Warn("webhook token mismatch", "delivery", d.id)
		http.Error(w, "bad token", http.StatusUnauthorized)
		return
	}
	if d.event != "Merge Request Hook" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var p struct {
		ObjectKind string `json:"object_kind"`
		Project    struct {
			PathWithNamespace string `json:"path_with_namespace"`
		} `json:"project"`
		Attrs struct {
			IID          int    `json:"iid"`
			Action       string `json:"action"`
			State        string `json:"state"`
			URL          string `json:"url"`
			SourceBranch string `json:"source_branch"`
			Draft        bool   `json:"draft"`
			WIP          bool   `json:"work_in_progress"`
			LastCommit   struct {
				ID string `json:"id"`
			} `json:"last_commit"`
		} `json:"object_attributes"`
	}
	if err := json.Unmarshal(body, &p); err != nil || p.ObjectKind != "merge_request" || p.Attrs.IID == 0 || p.Project.PathWithNamespace == "" {
		http.Error(w, "malformed Merge Request Hook payload", http.StatusBadRequest)
		return
	}
	state := "open"
	if p.Attrs.State == "closed" || p.Attrs.State == "merged" {
		state = "closed"
	}
	h.deliver(w, r, Event{Provider: "gitlab", DeliveryID: d.id, Action: p.Attrs.Action, Repo: d.repo, URL: p.Attrs.URL,
		RepoFullName: p.Project.PathWithNamespace, Number: p.Attrs.IID, HeadRef: p.Attrs.SourceBranch, HeadSHA: p.Attrs.LastCommit.ID,
		Merged: p.Attrs.State == "merged", Draft: p.Attrs.Draft || p.Attrs.WIP, State: state, Namespace: d.namespace}, log)
}

// ValidToken reports whether a GitLab X-Gitlab-Token equals the secret, in time
// independent of where they differ and of their lengths (both are hashed first).
func ValidToken(secret []byte, token string) bool {
	if token == "" {
		return false
	}
	a, b := sha256.Sum256(secret), sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// Valid reports whether header is GitHub's sha256 HMAC of body (constant-time).
func Valid(secret, body []byte, header string) bool {
	got, ok := strings.CutPrefix(header, "sha256=")
	return ok && validHex(secret, body, got)
}

// validHex reports whether sigHex is the hex sha256 HMAC of body (constant-time),
// Forgejo's signature header as it is and GitHub's after its prefix.
func validHex(secret, body []byte, sigHex string) bool {
	if sigHex == "" {
		return false
	}
	sig, err := hex.DecodeString(sigHex)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hmac.Equal(sig, m.Sum(nil))
}
