package renovate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/activities/forge"
	ghforge "github.com/nudgeflow/nudgeflow/activities/forge/github"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
)

// scmCredential is what Renovate pushes with, as build-service chooses it: on
// GitHub, an installation token of the GitHub App scoped to the one repository
// (build-service's GitHub App path), when the App's Secret exists and the App is
// installed there; otherwise the namespace's basic-auth SCM Secret. It returns the
// credential and Renovate's gitAuthor. The token is only ever written into the
// run's Secret.
func (a *Activities) scmCredential(ctx context.Context, namespace string, f forgeInfo) (credentials.Credential, string, error) {
	if f.platform == "github" {
		cred, author, ok, err := a.appCredential(ctx, f)
		if err != nil || ok {
			return cred, author, err
		}
	}
	cred, err := credentials.Lookup(ctx, a.Kube, namespace, f.host, f.repository)
	if errors.Is(err, credentials.ErrNotFound) {
		msg := err.Error()
		if f.platform == "github" {
			msg += " and no GitHub App installed on it"
		}
		return credentials.Credential{}, "", temporal.NewNonRetryableApplicationError(msg, nonRetryableNoCredentials, nil)
	}
	if err != nil {
		return credentials.Credential{}, "", err
	}
	return cred, basicAuthGitAuthor(cred.Username, f.host), nil
}

// basicAuthGitAuthor is build-service's gitAuthor for a basic-auth credential.
// The mail domain is the forge's host name without its port: Renovate refuses
// "Invalid gitAuthor" for an address like bot@users.noreply.git.example.com:8443,
// which a forge on a port of its own would otherwise get.
func basicAuthGitAuthor(username, host string) string {
	if name, _, err := net.SplitHostPort(host); err == nil {
		host = name
	}
	return fmt.Sprintf("%s <123456+%s[bot]@users.noreply.%s>", username, username, host)
}

// appCredential mints the App's repository-scoped token; ok is false when there is
// no App Secret or the App is not installed on the repository.
func (a *Activities) appCredential(ctx context.Context, f forgeInfo) (credentials.Credential, string, bool, error) {
	secret := a.GitHubApp
	if secret.Name == "" {
		secret = forge.DefaultAppSecret
	}
	app, ok, err := forge.FindApp(ctx, a.Kube, secret)
	if err != nil || !ok {
		return credentials.Credential{}, "", false, err
	}
	owner, name, _ := strings.Cut(f.repository, "/")
	repo := forge.Repo{Scheme: f.scheme, Host: f.host, Owner: owner, Name: name}
	token, bot, err := ghforge.AppToken(ctx, repo, app, a.Transport)
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == ghforge.ErrorTypeAppNotInstalled {
		activity.GetLogger(ctx).Info("the GitHub App is not installed on the repository; using its basic-auth SCM Secret", "repository", f.repository)
		return credentials.Credential{}, "", false, nil
	}
	if err != nil {
		// Never the key or a token in the message: AppToken's errors carry neither.
		return credentials.Credential{}, "", false, err
	}
	slug := strings.TrimSuffix(bot.Name, "[bot]")
	// build-service's App identity: "<slug>[bot]", committing as "<slug> <<id>+<slug>[bot]@users.noreply.github.com>".
	return credentials.Credential{SecretName: secret.String(), Username: bot.Name, Password: token},
		fmt.Sprintf("%s <%s>", slug, bot.Email), true, nil
}
