package github

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v92/github"
	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
)

// ErrorTypeAppNotInstalled is the error type of a token for a repository the App
// has no installation on (callers may fall back to other credentials).
const ErrorTypeAppNotInstalled = "GitHubAppNotInstalled"

// The permissions of every token nudgeflow mints, and nothing else:
//   - contents: write: the git data API (blobs, trees, commits, refs, GraphQL
//     updateRefs) of the ChangeGroup and PR group pushes; Renovate's branch pushes
//     (git over HTTPS, or its platform-native commits through the same API).
//   - pull_requests: write: open and edit a pull request, lift or set its draft,
//     and its comments and labels (GitHub checks an issue comment or label on a pull
//     request against this permission).
//   - checks: read and statuses: read: the ChangeGroup reads the check runs and the
//     combined status of its released head (did CI start?).
//
// metadata: read, which every repository request needs, is part of every
// installation token. Not asked for: issues (nudgeflow opens none; Renovate's
// dependency dashboard is off in the config it is given), workflows (a nudge never
// edits .github/workflows), administration and the rest.
func tokenPermissions() *gh.InstallationPermissions {
	return &gh.InstallationPermissions{Contents: new("write"), PullRequests: new("write"), Checks: new("read"), Statuses: new("read")}
}

// TokenPermissions names the permissions of nudgeflow's tokens ("checks:read,...").
func TokenPermissions() string { return permissionsKey(tokenPermissions()) }

// TokenPermissionMap is the permissions of nudgeflow's tokens as GitHub's API
// names them (name -> read|write), for tests that hold a token to them.
func TokenPermissionMap() map[string]string {
	p := tokenPermissions()
	return map[string]string{"contents": p.GetContents(), "pull_requests": p.GetPullRequests(), "checks": p.GetChecks(), "statuses": p.GetStatuses()}
}

func permissionsKey(p *gh.InstallationPermissions) string {
	return fmt.Sprintf("checks:%s,contents:%s,pull_requests:%s,statuses:%s", p.GetChecks(), p.GetContents(), p.GetPullRequests(), p.GetStatuses())
}

// refreshBefore is how long before its expiry a cached token is replaced: no
// activity starts a request with a token that may expire before it answers.
const refreshBefore = 5 * time.Minute

// AppToken is an installation token for one repository.
type AppToken struct {
	Token string
	// Expires is when GitHub says the token expires (an hour after it was minted).
	Expires time.Time
	// Bot is the App bot's commit identity.
	Bot forge.Signature
	// Installation is the App's installation on the repository's owner.
	Installation int64
}

// AppTokens mints GitHub App installation tokens, each for ONE repository with
// the permissions above (never an installation-wide token), and keeps each one
// until RefreshBefore its expiry, per (API, App, repository, permissions): a
// repository has one installation of an App, so that is per (installation,
// repository, permissions). Without it every activity made five GitHub calls
// before its first real one, polls included; with it a worker mints one token per
// repository an hour. Callers check ownership before they ask (internal/ownership):
// the cache is shared by every namespace, but a token is only ever handed to a
// namespace that owns its repository.
type AppTokens struct {
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu    sync.Mutex
	cache map[tokenKey]AppToken
}

type tokenKey struct {
	api string
	app int64
	// key is the App key's digest: a rotated key mints anew.
	key   [sha256.Size]byte
	repo  string
	perms string
}

// DefaultAppTokens is the worker process's cache.
var DefaultAppTokens = &AppTokens{}

// Token returns a token for repo alone, with nudgeflow's permissions, valid for at
// least minLife (RefreshBefore when less): the cached one, else a new one, minted
// through base (http.DefaultTransport when nil). A repository the App is not
// installed on is a non-retryable ErrorTypeAppNotInstalled. Errors never carry
// the key or a token.
func (t *AppTokens) Token(ctx context.Context, repo forge.Repo, app forge.App, base http.RoundTripper, minLife time.Duration) (AppToken, error) {
	repoKey, err := ownership.Key(repoURL(repo))
	if err != nil {
		return AppToken{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("github app: %v", err), "InvalidRepository", nil)
	}
	rest, _ := endpoints(repo)
	k := tokenKey{api: rest, app: app.ID, key: sha256.Sum256(app.PrivateKey), repo: repoKey, perms: TokenPermissions()}
	minLife = max(minLife, refreshBefore)
	t.mu.Lock()
	cached, ok := t.cache[k]
	t.mu.Unlock()
	if ok && cached.Expires.Sub(t.now()) > minLife {
		return cached, nil
	}
	minted, err := mint(ctx, repo, repoKey, app, base)
	if err != nil {
		return AppToken{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cache == nil {
		t.cache = map[tokenKey]AppToken{}
	}
	now := t.now()
	for key, v := range t.cache {
		if !v.Expires.After(now) {
			delete(t.cache, key) // expired: never handed out again
		}
	}
	t.cache[k] = minted
	return minted, nil
}

func (t *AppTokens) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

func repoURL(repo forge.Repo) string {
	scheme := repo.Scheme
	if scheme == "" {
		scheme = "https"
	}
	return scheme + "://" + repo.Host + "/" + repo.Owner + "/" + repo.Name
}

// mint makes the four calls of a new token: the App (its bot's name), its
// installation on the repository, the token for the repository alone, and the
// App's bot user (its id, for the commit identity).
func mint(ctx context.Context, repo forge.Repo, repoKey string, app forge.App, base http.RoundTripper) (AppToken, error) {
	if base == nil {
		base = http.DefaultTransport
	}
	atr, err := ghinstallation.NewAppsTransport(base, app.ID, app.PrivateKey)
	if err != nil {
		return AppToken{}, errors.New("github app: private key is not a valid RSA PEM key")
	}
	rest, _ := endpoints(repo)
	opts := []gh.ClientOptionsFunc{gh.WithHTTPClient(&http.Client{Transport: atr, Timeout: defaultTimeout}), gh.WithDisableRateLimitCheck()}
	if repo.Host != "github.com" {
		opts = append(opts, gh.WithEnterpriseURLs(rest, rest))
	}
	appClient, err := gh.NewClient(opts...)
	if err != nil {
		return AppToken{}, fmt.Errorf("github app client: %w", err)
	}
	a, resp, err := appClient.Apps.Get(ctx, "")
	if err != nil {
		return AppToken{}, classify("reading the GitHub App", err, resp, nil)
	}
	inst, resp, err := appClient.Apps.GetRepositoryInstallation(ctx, repo.Owner, repo.Name)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return AppToken{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("the GitHub App %s is not installed on %s", a.GetSlug(), repo.FullName()), ErrorTypeAppNotInstalled, nil)
		}
		return AppToken{}, classify("finding the App installation of "+repo.FullName(), err, resp, nil)
	}
	tok, resp, err := appClient.Apps.CreateInstallationToken(ctx, inst.GetID(), &gh.InstallationTokenOptions{
		Repositories: []string{repo.Name}, Permissions: tokenPermissions()})
	if err != nil {
		// A 422 says the installation lacks a permission asked for, or the repository.
		return AppToken{}, classify(fmt.Sprintf("creating an installation token for %s with %s", repo.FullName(), TokenPermissions()), err, resp, nil)
	}
	if err := sameRepository(repoKey, tok.Repositories); err != nil {
		revoke(ctx, repo, tok.GetToken(), base)
		return AppToken{}, err
	}
	bot, err := botUser(ctx, repo, a.GetSlug(), tok.GetToken(), base)
	if err != nil {
		revoke(ctx, repo, tok.GetToken(), base)
		return AppToken{}, err
	}
	return AppToken{Token: tok.GetToken(), Expires: tok.GetExpiresAt().Time, Installation: inst.GetID(), Bot: bot}, nil
}

// botUser is the commit identity of the App: its bot user "<slug>[bot]" and that
// user's noreply address "<user id>+<slug>[bot]@users.noreply.<host>". The bot
// user's id is not the App's id: GitHub attributes a commit to an account by that
// address, and MintMaker and build-service recognise the App's commits by it
// (build-service reads it the same way, GET /users/<slug>[bot]:
// BS:internal/controller/renovate_util.go:316-321,358). It is read once per token
// minted, so the token cache holds it too.
func botUser(ctx context.Context, repo forge.Repo, slug, token string, base http.RoundTripper) (forge.Signature, error) {
	login := slug + "[bot]"
	c, err := New(forge.ClientOptions{Repo: repo, Token: token, Transport: base})
	if err != nil {
		return forge.Signature{}, fmt.Errorf("github client for the App's bot user: %w", err)
	}
	u, resp, err := c.rest.Users.Get(ctx, login)
	if err != nil {
		return forge.Signature{}, classify("reading the App's bot user "+login, err, resp, nil)
	}
	if u.GetID() <= 0 {
		return forge.Signature{}, fmt.Errorf("GitHub answered no id for the App's bot user %s", login)
	}
	return forge.Signature{Name: login, Email: fmt.Sprintf("%d+%s@users.noreply.%s", u.GetID(), login, NoreplyHost(repo.Host))}, nil
}

// NoreplyHost is the domain of a GitHub host's noreply addresses: GitHub's own is
// users.noreply.github.com, a GitHub Enterprise Server's users.noreply.<hostname>
// (without a port).
func NoreplyHost(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// sameRepository: the token's one repository, as GitHub names it (html_url), is
// the one ownership was checked for. Another URL for it (a GitHub Enterprise
// host's IP address or second name, a renamed repository's old name) is another
// ownership key, which a tenant could claim without owning the repository: such a
// token is never used.
func sameRepository(want string, got []*gh.Repository) error {
	if len(got) == 1 {
		if k, err := ownership.Key(got[0].GetHTMLURL()); err == nil && k == want {
			return nil
		}
	}
	names := []string{}
	for _, r := range got {
		names = append(names, r.GetHTMLURL())
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
		"GitHub names the repository of the token %s, not %s: nudgeflow uses a token only for the repository whose URL was checked for ownership; "+
			"name the repository by that URL in the Component and in its Pipelines as Code Repository", strings.Join(names, ", "), want),
		ownership.ErrorType, nil)
}

// revoke deletes a token nudgeflow will not use (best effort: it expires within
// the hour anyway).
func revoke(ctx context.Context, repo forge.Repo, token string, base http.RoundTripper) {
	c, err := New(forge.ClientOptions{Repo: repo, Token: token, Transport: base})
	if err != nil {
		return
	}
	_, _ = c.rest.Apps.RevokeInstallationToken(ctx)
}
