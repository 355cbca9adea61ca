package changegrouppr

import (
	"context"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	fjforge "github.com/nudgeflow/nudgeflow/internal/forge/forgejo"
)

// connectForgejo connects to a Forgejo or Gitea repository with the basic-auth
// Secret Konflux uses for it (username and an access token; no App flow exists).
func connectForgejo(ctx context.Context, a *Activities, r changegroupprapi.Repo, repo forge.Repo) (forge.Forge, []string, error) {
	ba, err := a.requireBasicAuth(ctx, r, repo)
	if err != nil {
		return nil, nil, err
	}
	f, err := fjforge.New(forge.ClientOptions{Repo: repo, Token: ba.Password, Bot: a.basicAuthBot(forge.ProviderForgejo, repo, ba), Transport: a.cfg.Transport})
	return f, []string{ba.Password}, err
}
