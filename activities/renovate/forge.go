package renovate

import (
	"fmt"
	"net/url"
	"strings"
)

type forgeInfo struct {
	platform, scheme, host, repository, endpoint string
}

// parseForge derives Renovate's platform and endpoint from the git URL, with the
// component's git-provider annotation taking precedence, by providerOf
// (forge.ProviderOf is build-service's rule).
// The endpoint is each forge's REST API root. build-service writes
// https://api.<host>/ for every GitHub host, which is right only for github.com:
// GitHub Enterprise serves its API at https://<host>/api/v3/, so that is used for
// any other host.
//
// The endpoint keeps the git URL's scheme when that is plain http (build-service
// always writes https://): a forge served over http only (the dev stack's
// Gitea, a forge on a private network) has no https endpoint for Renovate to
// reach, and the token would go over http to clone anyway. Every other scheme
// gives https, and github.com is always https.
func parseForge(gitURL, providerAnnotation string, providerOf func(annotation, host string) string) (forgeInfo, error) {
	u, err := url.Parse(gitURL)
	if err != nil || u.Host == "" {
		return forgeInfo{}, fmt.Errorf("git url %q is not a URL with a host", gitURL)
	}
	f := forgeInfo{scheme: u.Scheme, host: u.Host, repository: strings.Trim(strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git"), "/")}
	apiScheme := "https"
	if strings.EqualFold(u.Scheme, "http") {
		apiScheme = "http"
	}
	root := apiScheme + "://" + u.Host
	switch providerOf(providerAnnotation, u.Hostname()) {
	case "github":
		f.platform, f.endpoint = "github", root+"/api/v3/"
		if strings.EqualFold(u.Hostname(), "github.com") {
			f.endpoint = "https://api.github.com/"
		}
	case "gitlab":
		f.platform, f.endpoint = "gitlab", root+"/api/v4/"
	case "forgejo":
		f.platform, f.endpoint = "forgejo", root+"/api/v1/"
	default:
		return forgeInfo{}, fmt.Errorf("cannot tell the git provider of %q: set the component's git-provider annotation", gitURL)
	}
	return f, nil
}
