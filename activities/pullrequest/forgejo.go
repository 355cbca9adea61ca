package pullrequest

import (
	"context"
	"fmt"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/activities/forge"
	fjforge "github.com/nudgeflow/nudgeflow/activities/forge/forgejo"
)

// connectForgejo connects to a Forgejo or Gitea repository with the basic-auth
// Secret Konflux uses for it (username and an access token; no App flow exists).
func (a *Activities) connectForgejo(ctx context.Context, r Repo) (forge.Forge, []string, error) {
	repo, err := forge.ParseRepoURL(r.URL)
	if err != nil {
		return nil, nil, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidRepository", nil)
	}
	ba, ok, err := forge.FindBasicAuth(ctx, a.k8s, r.Namespace, repo)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"no credentials for %s: no basic-auth Secret labelled %s=scm, %s=<host> in namespace %s",
			repo.Host, forge.LabelCredentials, forge.LabelSCMHost, r.Namespace), "NoCredentials", nil)
	}
	bot := a.cfg.Bot
	if bot.Email == "" {
		host := repo.Host
		if i := strings.LastIndex(host, ":"); i >= 0 {
			host = host[:i]
		}
		bot = forge.Signature{Name: ba.Username, Email: ba.Username + "@users.noreply." + host}
	}
	activity.GetLogger(ctx).Debug("using basic-auth credentials", "repo", repo.FullName(), "secret", ba.Secret)
	f, err := fjforge.New(fjforge.Options{Repo: repo, Token: ba.Password, Bot: bot, Transport: a.cfg.Transport})
	return f, []string{ba.Password}, err
}
