package renovate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	ghforge "github.com/nudgeflow/nudgeflow/internal/forge/github"
)

// runTokenLife is how long an App token must still be valid when it goes into a
// run's Secret: the run may wait for its branch or in a Kueue queue before it
// starts (a token lives an hour; see refreshRunToken for a longer wait).
const runTokenLife = 30 * time.Minute

// scm is what a run pushes with: the credential, Renovate's gitAuthor, and, for a
// GitHub App token, when it expires (zero for a basic-auth Secret's, which does
// not expire on its own).
type scm struct {
	cred      credentials.Credential
	gitAuthor string
	expires   time.Time
}

// scmCredential is what Renovate pushes with, as build-service chooses it: on
// GitHub, an installation token of the GitHub App scoped to the one repository
// (build-service's GitHub App path), when the App's Secret exists and the App is
// installed there; otherwise the namespace's basic-auth SCM Secret. The token is
// only ever written into the run's Secret. The caller has checked that the
// namespace owns the repository.
func (a *Activities) scmCredential(ctx context.Context, namespace string, f forgeInfo) (scm, error) {
	if f.platform == "github" {
		s, ok, err := a.appCredential(ctx, f)
		if err != nil || ok {
			return s, err
		}
	}
	cred, err := credentials.Lookup(ctx, a.Kube, namespace, f.host, f.repository)
	if errors.Is(err, credentials.ErrNotFound) {
		msg := err.Error()
		if f.platform == "github" {
			msg += " and no GitHub App installed on it"
		}
		return scm{}, temporal.NewNonRetryableApplicationError(msg, nonRetryableNoCredentials, nil)
	}
	if err != nil {
		return scm{}, err
	}
	username, gitAuthor := BasicAuthIdentity(f.platform, f.host, cred.Username, cred.Password)
	activity.GetLogger(ctx).Info("Renovate resolves the identity of the basic-auth SCM Secret's token itself",
		"secret", cred.SecretName, "secretUsername", cred.Username, "platform", f.platform, "gitAuthor", gitAuthor)
	// The Secret's user name stays in the credential (the log above names it);
	// what Renovate is told is BasicAuthIdentity's.
	cred.Username = username
	return scm{cred: cred, gitAuthor: gitAuthor}, nil
}

// BasicAuthIdentity is the username and gitAuthor Renovate is given for a token
// from a basic-auth SCM Secret whose user name is secretUser. "" leaves the
// option to Renovate, which resolves it from the token itself.
//
// A basic-auth Secret's user name is free text: it need not be the login the
// token acts as. Renovate 39 recognises its own pull requests on GitHub by their
// author (lib/modules/platform/github/index.ts: initPlatform's renovateUsername
// is the configured username, else the token's own login: GraphQL
// viewer{login databaseId} for an installation token "ghs_…", GET /user for any
// other), and build-service's `username: <Secret's user name>` made a second
// build's run find no pull request and skip the branch ("Branch has been edited
// but found no PR - skipping"). So username is left out: Renovate asks the forge
// who the token is, as it must anyway to log in, and nudgeflow makes no call with
// a tenant's token and keeps no second copy of that logic. GitLab
// (scope=created_by_me) and Gitea/Forgejo (GET /user) ignore the option.
//
// gitAuthor must match the author of the commits Renovate reads back
// (isBranchModified compares their author emails with it): a commit Renovate
// pushes over git carries gitAuthor itself, so build-service's address is kept
// there; but on GitHub an installation token's commits are platform-native (made
// through the API), and GitHub records its bot as their author,
// "<login> <<bot user id>+<login>@users.noreply.<host>>". Renovate discovers
// exactly that address when gitAuthor is not given (initPlatform), so it is not
// given for such a token; build-service's "123456+…" address would make Renovate
// read its own commit as a person's edit.
func BasicAuthIdentity(platform, host, secretUser, token string) (username, gitAuthor string) {
	if platform == "github" && strings.HasPrefix(token, "ghs_") {
		return "", ""
	}
	return "", basicAuthGitAuthor(secretUser, host)
}

// basicAuthGitAuthor is build-service's gitAuthor for a basic-auth credential.
// The mail domain is the forge's host name without its port: Renovate refuses
// "Invalid gitAuthor" for an address like bot@users.noreply.git.example.com:8443,
// which a forge on a port of its own would otherwise get.
func basicAuthGitAuthor(username, host string) string {
	return fmt.Sprintf("%s <123456+%s[bot]@users.noreply.%s>", username, username, ghforge.NoreplyHost(host))
}

// appCredential is the App's token for the one repository (cached by
// a.appTokens(), valid RunTokenLife at least); ok is false when there is no App
// Secret or the App is not installed on the repository.
func (a *Activities) appCredential(ctx context.Context, f forgeInfo) (scm, bool, error) {
	secret := a.GitHubApp
	if secret.Name == "" {
		secret = forge.DefaultAppSecret
	}
	app, ok, err := forge.FindApp(ctx, a.Kube, secret)
	if err != nil || !ok {
		return scm{}, false, err
	}
	owner, name, _ := strings.Cut(f.repository, "/")
	repo := forge.Repo{Scheme: f.scheme, Host: f.host, Owner: owner, Name: name}
	tok, err := a.appTokens().Token(ctx, repo, app, a.Transport, runTokenLife)
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == ghforge.ErrorTypeAppNotInstalled {
		activity.GetLogger(ctx).Info("the GitHub App is not installed on the repository; using its basic-auth SCM Secret", "repository", f.repository)
		return scm{}, false, nil
	}
	if err != nil {
		// Never the key or a token in the message: the token's errors carry neither.
		return scm{}, false, err
	}
	return scm{cred: credentials.Credential{SecretName: secret.String(), Username: tok.Bot.Name, Password: tok.Token},
		gitAuthor: AppGitAuthor(tok.Bot), expires: tok.Expires}, true, nil
}

// AppGitAuthor is build-service's gitAuthor for the GitHub App whose bot is bot
// ("<slug>[bot]"): "<slug> <<bot user id>+<slug>[bot]@users.noreply.github.com>"
// (the bot user's id, not the App's: the token's Bot reads it,
// BS:internal/controller/renovate_util.go:316-321,358).
func AppGitAuthor(bot forge.Signature) string {
	return fmt.Sprintf("%s <%s>", strings.TrimSuffix(bot.Name, "[bot]"), bot.Email)
}

func (a *Activities) appTokens() *ghforge.AppTokens {
	if a.AppTokens != nil {
		return a.AppTokens
	}
	return ghforge.DefaultAppTokens
}
