// Package changegrouppr owns the one pull request of a ChangeGroup on the nudged
// component's repository: it renders the description, rewrites digest references in
// the repository's files, pushes commits through the forge's API (no clone), holds CI
// with `[skip ci]` and releases it exactly once, and reports what it observes.
//
// Every activity here looks before it writes: it reads the PR's real state first, so
// a retry or a second call with the same request changes nothing.
//
// Nothing in these types is a secret: they travel through workflow histories,
// which the Temporal Web UI shows. Activities read tokens from Kubernetes Secrets.
package changegrouppr

import (
	"fmt"
	"net/http"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	ghforge "github.com/nudgeflow/nudgeflow/internal/forge/github"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
)

// Config configures the activities.
type Config struct {
	// Bot is the commit identity for basic-auth credentials; empty derives
	// "<username> <<username>@users.noreply.<host>>" from the Secret's username.
	// Commits whose author or committer email differs from the bot's are human edits.
	Bot forge.Signature
	// AppSecret is the GitHub App Secret; zero means forge.DefaultAppSecret.
	AppSecret types.NamespacedName
	// Transport is the HTTP round tripper for forge calls (http.DefaultTransport when nil).
	Transport http.RoundTripper
	// Ownership says whether the request's namespace owns the repository, which it
	// must before any credential is read or token minted for it; nil checks with
	// the activities' reader, without the cluster admin's bindings and without
	// Events.
	Ownership *ownership.Checker
	// AppTokens mints and caches the GitHub App's tokens
	// (ghforge.DefaultAppTokens when nil).
	AppTokens *ghforge.AppTokens
}

// Activities are the pull request activities. They read credentials from Kubernetes
// Secrets at call time; no credential is ever in a request, a result, an error or a log.
type Activities struct {
	k8s client.Reader
	cfg Config
	// identity, set by ConnectAs on a copy, chooses the commit identity of
	// basic-auth credentials (nil: cfg.Bot's rule).
	identity Identity
}

// New returns the activities; k8s needs get/list on Secrets.
func New(k8s client.Reader, cfg Config) *Activities {
	if cfg.AppSecret.Name == "" {
		cfg.AppSecret = forge.DefaultAppSecret
	}
	if cfg.Ownership == nil {
		cfg.Ownership = &ownership.Checker{Reader: k8s}
	}
	if cfg.AppTokens == nil {
		cfg.AppTokens = ghforge.DefaultAppTokens
	}
	return &Activities{k8s: k8s, cfg: cfg}
}

// Register registers the activities under their contract names (a worker.Worker or a
// test activity environment).
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.SyncPullRequest, activity.RegisterOptions{Name: changegroupprapi.SyncActivity})
	r.RegisterActivityWithOptions(a.ObservePullRequest, activity.RegisterOptions{Name: changegroupprapi.ObserveActivity})
	r.RegisterActivityWithOptions(a.ClosePullRequest, activity.RegisterOptions{Name: changegroupprapi.CloseActivity})
	r.RegisterActivityWithOptions(a.ReadPullRequestCI, activity.RegisterOptions{Name: changegroupprapi.CIActivity})
	r.RegisterActivityWithOptions(a.CommentOnPullRequest, activity.RegisterOptions{Name: changegroupprapi.CommentActivity})
}

// invalid refuses a request that can never succeed: it is not retried.
func invalid(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), "InvalidRequest", nil)
}
