package pullrequest

import (
	"context"

	"go.temporal.io/sdk/activity"

	"github.com/nudgeflow/nudgeflow/activities/forge"
	fjforge "github.com/nudgeflow/nudgeflow/activities/forge/forgejo"
)

// connectForgejo connects to a Forgejo or Gitea repository with the basic-auth
// Secret Konflux uses for it (username and an access token; no App flow exists).
func connectForgejo(ctx context.Context, a *Activities, r Repo, repo forge.Repo) (forge.Forge, []string, error) {
	ba, ok, err := forge.FindBasicAuth(ctx, a.k8s, r.Namespace, repo)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, noCredentials(r, repo, false)
	}
	activity.GetLogger(ctx).Debug("using basic-auth credentials", "repo", repo.FullName(), "secret", ba.Secret)
	f, err := fjforge.New(fjforge.Options{Repo: repo, Token: ba.Password, Bot: a.basicAuthBot(repo, ba), Transport: a.cfg.Transport})
	return f, []string{ba.Password}, err
}
