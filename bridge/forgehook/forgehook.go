// Package forgehook receives forge webhooks on one endpoint: GitHub's (verified by
// X-Hub-Signature-256), GitLab's (verified by X-Gitlab-Token) and Forgejo's or
// Gitea's (verified by X-Forgejo-Signature or X-Gitea-Signature), and turns pull
// request and merge request events into Sink calls. The secret is never logged.
package forgehook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/nudgeflow/nudgeflow/activities/forge/forgejo"
)

// Event is a pull request (GitHub, Forgejo) or merge request (GitLab) event as
// nudgeflow needs it.
type Event struct {
	// Provider is "github", "gitlab" or "forgejo" (Forgejo and Gitea alike).
	Provider   string
	DeliveryID string
	Action     string
	// URL is the PR's web page; it names the host, so events route by host too.
	URL          string
	RepoFullName string
	Number       int
	HeadRef      string
	HeadSHA      string
	Merged       bool
	Draft        bool
	// State is "open" or "closed".
	State string
	// Namespace is set when a secret bound to the repository (RepoSecrets)
	// verified the event: it may reach that namespace's groups only. Empty: the
	// shared secret verified it.
	Namespace string
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

// Sink receives verified events.
type Sink interface {
	PullRequestEvent(ctx context.Context, e Event) error
}

// SecretFunc returns the webhook secret (e.g. read from a Kubernetes Secret).
type SecretFunc func(ctx context.Context) ([]byte, error)

// Handler is the webhook endpoint.
type Handler struct {
	Secret SecretFunc
	// RepoSecrets, when set, binds repositories to their own secrets (per tenant):
	// an event naming such a repository verifies only under one of them.
	RepoSecrets RepoSecretsFunc
	Sink        Sink
	Log         *slog.Logger
	// MaxBody bounds the payload (25 MiB, GitHub's cap, when zero).
	MaxBody int64
}

// StaticSecret is a SecretFunc for a configured value.
func StaticSecret(s []byte) SecretFunc {
	return func(context.Context) ([]byte, error) { return s, nil }
}

// ServeHTTP: 401 on a bad signature or token, 204 for other events, 400 on a
// malformed payload, 202 when the sink accepted the event, 503 when it failed (the
// forge redelivers).
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
	// Which secrets may sign this delivery: those bound to the repository it names
	// (read, unverified, from the payload: it only selects the candidates), else
	// the shared one.
	var named struct {
		Repository struct {
			HTMLURL string `json:"html_url"`
		} `json:"repository"`
		Project struct {
			WebURL string `json:"web_url"`
		} `json:"project"`
	}
	_ = json.Unmarshal(body, &named)
	var candidates []BoundSecret
	if h.RepoSecrets != nil {
		repo := RepoKey(named.Repository.HTMLURL)
		if r.Header.Get("X-Gitlab-Event") != "" {
			repo = RepoKey(named.Project.WebURL)
		}
		if repo != "" {
			bound, err := h.RepoSecrets(r.Context(), repo)
			if err != nil {
				log.Error("repository webhook secrets unavailable", "error", err)
				http.Error(w, "webhook secret unavailable", http.StatusServiceUnavailable)
				return
			}
			candidates = bound
		}
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
	if r.Header.Get("X-Gitlab-Event") != "" {
		ns, ok := verify(func(secret []byte) bool { return ValidToken(secret, r.Header.Get("X-Gitlab-Token")) })
		h.serveGitLab(w, r, body, ok, ns, log)
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
	h.servePullRequest(w, r, body, d, log)
}

// delivery is what a GitHub-style delivery's headers say, read by its provider's rules.
type delivery struct {
	provider, id, event string
	signed              bool
	// namespace is the namespace of the bound secret that verified it ("": shared).
	namespace string
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
	e := Event{Provider: d.provider, DeliveryID: d.id, Action: p.Action, URL: p.PullRequest.HTMLURL, RepoFullName: p.Repository.FullName,
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

func (h *Handler) deliver(w http.ResponseWriter, r *http.Request, e Event, log *slog.Logger) {
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
func (h *Handler) serveGitLab(w http.ResponseWriter, r *http.Request, body []byte, signed bool, namespace string, log *slog.Logger) {
	if !signed {
		log.Warn("webhook token mismatch", "delivery", r.Header.Get("X-Gitlab-Event-UUID"))
		http.Error(w, "bad token", http.StatusUnauthorized)
		return
	}
	if r.Header.Get("X-Gitlab-Event") != "Merge Request Hook" {
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
	h.deliver(w, r, Event{Provider: "gitlab", DeliveryID: r.Header.Get("X-Gitlab-Event-UUID"), Action: p.Attrs.Action, URL: p.Attrs.URL,
		RepoFullName: p.Project.PathWithNamespace, Number: p.Attrs.IID, HeadRef: p.Attrs.SourceBranch, HeadSHA: p.Attrs.LastCommit.ID,
		Merged: p.Attrs.State == "merged", Draft: p.Attrs.Draft || p.Attrs.WIP, State: state, Namespace: namespace}, log)
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
