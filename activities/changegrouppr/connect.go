package changegrouppr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	ghforge "github.com/nudgeflow/nudgeflow/internal/forge/github"
	glforge "github.com/nudgeflow/nudgeflow/internal/forge/gitlab"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
)

// connectors open a client for each provider nudgeflow speaks (forge.Provider's
// names); a new forge adds one entry.
var connectors = map[string]func(ctx context.Context, a *Activities, r changegroupprapi.Repo, repo forge.Repo) (forge.Forge, []string, error){
	forge.ProviderGitHub:  connectGitHub,
	forge.ProviderGitLab:  connectGitLab,
	forge.ProviderForgejo: connectForgejo,
}

// connect finds the credentials for the repository and returns a forge client and the
// secret values that must never appear in an error. First of all, the request's
// namespace must own the repository (internal/ownership): a refusal is a
// non-retryable RepositoryNotOwned, recorded as a Warning Event on the object on
// refers to (nil: none), and no credential is read.
func (a *Activities) connect(ctx context.Context, r changegroupprapi.Repo, on *corev1.ObjectReference) (forge.Forge, []string, error) {
	provider := forge.NormalizeProvider(r.Provider)
	open, ok := connectors[provider]
	if !ok {
		return nil, nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("provider %q is not supported yet", r.Provider), "UnsupportedProvider", nil)
	}
	repo, err := forge.ParseRepoURL(r.URL)
	if err != nil {
		return nil, nil, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidRepository", nil)
	}
	if err := a.cfg.Ownership.Require(ctx, r.Namespace, r.URL, on); err != nil {
		if ownership.IsRefusal(err) {
			activity.GetLogger(ctx).Warn("refused: the namespace does not own the repository", "namespace", r.Namespace, "repo", r.URL, "error", err)
		}
		return nil, nil, err
	}
	// Each forge request heartbeats first: a sync is many requests, and the sync
	// activity's heartbeat timeout (a minute) bounds the time between two.
	hb := *a
	hb.cfg.Transport = heartbeatTransport{ctx: ctx, base: a.cfg.Transport}
	return open(ctx, &hb, r, repo)
}

// heartbeatTransport records an activity heartbeat before each request it sends.
type heartbeatTransport struct {
	ctx  context.Context
	base http.RoundTripper
}

func (h heartbeatTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if activity.IsActivity(h.ctx) {
		activity.RecordHeartbeat(h.ctx)
	}
	base := h.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

// noCredentials explains where credentials are looked up.
func noCredentials(r changegroupprapi.Repo, repo forge.Repo, alsoApp bool) error {
	app := ""
	if alsoApp {
		app = " and no GitHub App"
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
		"no credentials for %s: no basic-auth Secret labelled %s=scm, %s=<host> in namespace %s%s",
		repo.Host, forge.LabelCredentials, forge.LabelSCMHost, r.Namespace, app), "NoCredentials", nil)
}

// basicAuthBot is the identity a ConnectAs chose, else the configured bot, else
// "<username> <<username>@users.noreply.<host>>".
func (a *Activities) basicAuthBot(provider string, repo forge.Repo, ba forge.BasicAuth) forge.Signature {
	if a.identity != nil {
		if s := a.identity(provider, repo, ba); s.Email != "" {
			return s
		}
	}
	if a.cfg.Bot.Email != "" {
		return a.cfg.Bot
	}
	host := repo.Host
	if i := strings.LastIndex(host, ":"); i >= 0 {
		host = host[:i]
	}
	return forge.Signature{Name: ba.Username, Email: ba.Username + "@users.noreply." + host}
}

// requireBasicAuth is the basic-auth Secret of a forge that has no other kind of
// credentials (GitLab, Forgejo): none is a non-retryable NoCredentials.
func (a *Activities) requireBasicAuth(ctx context.Context, r changegroupprapi.Repo, repo forge.Repo) (forge.BasicAuth, error) {
	ba, ok, err := forge.FindBasicAuth(ctx, a.k8s, r.Namespace, repo)
	if err != nil {
		return forge.BasicAuth{}, err
	}
	if !ok {
		return forge.BasicAuth{}, noCredentials(r, repo, false)
	}
	activity.GetLogger(ctx).Debug("using basic-auth credentials", "repo", repo.FullName(), "secret", ba.Secret)
	return ba, nil
}

// connectGitLab uses a basic-auth Secret whose password is a personal, project or
// group access token (Konflux's GitLab SCM Secrets). Without a configured bot the
// commit identity is the token's user, as GitLab records it as the committer.
func connectGitLab(ctx context.Context, a *Activities, r changegroupprapi.Repo, repo forge.Repo) (forge.Forge, []string, error) {
	ba, err := a.requireBasicAuth(ctx, r, repo)
	if err != nil {
		return nil, nil, err
	}
	bot := a.cfg.Bot
	if a.identity != nil {
		if s := a.identity(forge.ProviderGitLab, repo, ba); s.Email != "" {
			bot = s
		}
	}
	f, err := glforge.New(ctx, forge.ClientOptions{Repo: repo, Token: ba.Password, Bot: bot, Transport: a.cfg.Transport})
	if err != nil {
		return nil, []string{ba.Password}, err
	}
	return f, []string{ba.Password}, nil
}

func connectGitHub(ctx context.Context, a *Activities, r changegroupprapi.Repo, repo forge.Repo) (forge.Forge, []string, error) {
	if a.identity != nil {
		// Writing as Renovate (ConnectAs): Renovate's order, build-service's: the
		// App's token where the App is installed on the repository, its commits
		// platform-native as Renovate's are; else the basic-auth Secret.
		f, secrets, ok, err := connectGitHubApp(ctx, a, r, repo, true)
		if err != nil || ok {
			return f, secrets, err
		}
	}
	ba, ok, err := forge.FindBasicAuth(ctx, a.k8s, r.Namespace, repo)
	if err != nil {
		return nil, nil, err
	}
	if ok {
		activity.GetLogger(ctx).Debug("using basic-auth credentials", "repo", repo.FullName(), "secret", ba.Secret)
		f, err := ghforge.New(forge.ClientOptions{Repo: repo, Token: ba.Password, Bot: a.basicAuthBot(forge.ProviderGitHub, repo, ba), Transport: a.cfg.Transport})
		return f, []string{ba.Password}, err
	}
	if a.identity != nil {
		return nil, nil, noCredentials(r, repo, true)
	}
	f, secrets, ok, err := connectGitHubApp(ctx, a, r, repo, false)
	if err == nil && !ok {
		err = noCredentials(r, repo, true)
	}
	return f, secrets, err
}

// connectGitHubApp connects with the GitHub App's token for the one repository;
// ok is false when there is no App Secret, or, asRenovate, when the App is not
// installed on the repository (Renovate then uses the basic-auth Secret).
// asRenovate commits platform-native as the App's bot (ClientOptions.NativeCommits);
// otherwise as the configured bot, else the App's.
func connectGitHubApp(ctx context.Context, a *Activities, r changegroupprapi.Repo, repo forge.Repo, asRenovate bool) (forge.Forge, []string, bool, error) {
	app, ok, err := forge.FindApp(ctx, a.k8s, a.cfg.AppSecret)
	if err != nil || !ok {
		return nil, nil, false, err
	}
	tok, err := a.cfg.AppTokens.Token(ctx, repo, app, a.cfg.Transport, 0)
	var ae *temporal.ApplicationError
	if asRenovate && errors.As(err, &ae) && ae.Type() == ghforge.ErrorTypeAppNotInstalled {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	bot := tok.Bot
	if a.cfg.Bot.Email != "" && !asRenovate {
		bot = a.cfg.Bot
	}
	f, err := ghforge.New(forge.ClientOptions{Repo: repo, Token: tok.Token, Bot: bot, Transport: a.cfg.Transport, NativeCommits: asRenovate})
	return f, []string{tok.Token, string(app.PrivateKey)}, true, err
}

// redact guarantees that no secret value leaves an activity inside an error.
func redact(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	leaked := false
	for _, s := range secrets {
		if len(s) >= 4 && strings.Contains(msg, s) {
			msg, leaked = strings.ReplaceAll(msg, s, "[REDACTED]"), true
		}
	}
	if !leaked {
		return err
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return temporal.NewApplicationErrorWithOptions(msg, ae.Type(), temporal.ApplicationErrorOptions{
			NonRetryable: ae.NonRetryable(), NextRetryDelay: ae.NextRetryDelay()})
	}
	return errors.New(msg)
}
