package renovate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/forge"
)

// Renovate's endpoint is each forge's REST API root: github.com's api host, GitHub
// Enterprise's /api/v3, GitLab's /api/v4 (self-hosted too), Forgejo's and Gitea's
// /api/v1. The git-provider annotation wins over the host.
func TestParseForgeEndpoints(t *testing.T) {
	for _, tc := range []struct {
		url, annotation                string
		platform, endpoint, host, repo string
	}{
		{"https://github.com/org/repo", "", "github", "https://api.github.com/", "github.com", "org/repo"},
		{"https://GitHub.com/org/repo.git", "", "github", "https://api.github.com/", "GitHub.com", "org/repo"},
		{"https://github.example.com/org/repo", "", "github", "https://github.example.com/api/v3/", "github.example.com", "org/repo"},
		{"https://git.corp.example/org/repo", "github", "github", "https://git.corp.example/api/v3/", "git.corp.example", "org/repo"},
		{"https://gitlab.com/group/sub/repo.git", "", "gitlab", "https://gitlab.com/api/v4/", "gitlab.com", "group/sub/repo"},
		{"https://git.example.org:8443/group/repo", "gitlab", "gitlab", "https://git.example.org:8443/api/v4/", "git.example.org:8443", "group/repo"},
		{"https://codeberg.org/org/repo", "", "forgejo", "https://codeberg.org/api/v1/", "codeberg.org", "org/repo"},
		{"https://gitea.example.com/org/repo", "", "forgejo", "https://gitea.example.com/api/v1/", "gitea.example.com", "org/repo"},
		{"https://git.example.net/org/repo", "gitea", "forgejo", "https://git.example.net/api/v1/", "git.example.net", "org/repo"},
	} {
		f, err := parseForge(tc.url, tc.annotation, forge.ProviderOf)
		require.NoError(t, err, tc.url)
		require.Equal(t, forgeInfo{platform: tc.platform, scheme: "https", endpoint: tc.endpoint, host: tc.host, repository: tc.repo}, f, tc.url)
	}
	// A forge served over plain http (the dev stack's Gitea) keeps its scheme:
	// there is no https endpoint to reach. github.com stays https.
	for _, tc := range []struct {
		url, annotation, platform, endpoint string
	}{
		{"http://127.0.0.1:3000/tenant/consumer", "forgejo", "forgejo", "http://127.0.0.1:3000/api/v1/"},
		{"http://gitlab.internal:8080/group/repo.git", "gitlab", "gitlab", "http://gitlab.internal:8080/api/v4/"},
		{"http://127.0.0.1:8180/org/repo", "github", "github", "http://127.0.0.1:8180/api/v3/"},
		{"http://github.com/org/repo", "", "github", "https://api.github.com/"},
	} {
		f, err := parseForge(tc.url, tc.annotation, forge.ProviderOf)
		require.NoError(t, err, tc.url)
		require.Equal(t, "http", f.scheme, tc.url)
		require.Equal(t, tc.platform, f.platform, tc.url)
		require.Equal(t, tc.endpoint, f.endpoint, tc.url)
	}
	_, err := parseForge("https://git.example.net/org/repo", "", forge.ProviderOf)
	require.ErrorContains(t, err, "git-provider annotation")
	_, err = parseForge("not a url", "", forge.ProviderOf)
	require.Error(t, err)
}

// A build a ChangeGroup hands back lands where the group's pull request went: a
// host that names no forge is GitHub Enterprise then, as for the group's own PR
// (changegroupcr's repoOf); the annotation and a host that names a forge still win.
func TestParseForgeOfAHandedBackBuild(t *testing.T) {
	f, err := parseForge("https://git.example.net/org/repo", "", forge.ProviderOrGitHub)
	require.NoError(t, err)
	require.Equal(t, forgeInfo{platform: "github", scheme: "https", endpoint: "https://git.example.net/api/v3/", host: "git.example.net", repository: "org/repo"}, f)
	f, err = parseForge("https://git.example.net/group/repo", "gitlab", forge.ProviderOrGitHub)
	require.NoError(t, err)
	require.Equal(t, "gitlab", f.platform)
	f, err = parseForge("https://gitlab.example.org/group/repo", "", forge.ProviderOrGitHub)
	require.NoError(t, err)
	require.Equal(t, "gitlab", f.platform)
}

// A nudge of a GitLab-hosted component: platform gitlab, the host's /api/v4/
// endpoint (self-hosted too, port kept), and gitLabIgnoreApprovals carried from the
// ConfigMap into the generated config (verified, not rewritten).
func TestGitLabNudgeConfig(t *testing.T) {
	f, err := parseForge("https://gitlab.example.org:8443/group/sub/bundle.git", "", forge.ProviderOf)
	require.NoError(t, err)
	require.Equal(t, forgeInfo{platform: "gitlab", scheme: "https", endpoint: "https://gitlab.example.org:8443/api/v4/", host: "gitlab.example.org:8443", repository: "group/sub/bundle"}, f)
	for _, shape := range []string{"gitlab", "gitlab-self-hosted"} {
		c := GenerateConfig(Shapes()[shape])
		require.Equal(t, "gitlab", c.Platform, shape)
		require.True(t, strings.HasSuffix(c.Endpoint, "/api/v4/"), shape)
		require.True(t, c.GitLabIgnoreApprovals, shape)
	}
	require.False(t, GenerateConfig(Shapes()["defaults"]).GitLabIgnoreApprovals, "off unless the ConfigMap asks")
}

// The basic-auth gitAuthor is build-service's, its mail domain the forge's host
// name: a port would make the address one Renovate refuses ("Invalid gitAuthor").
func TestBasicAuthGitAuthorMailDomainHasNoPort(t *testing.T) {
	for host, want := range map[string]string{
		"gitlab.com":           "konflux <123456+konflux[bot]@users.noreply.gitlab.com>",
		"git.example.com:8443": "konflux <123456+konflux[bot]@users.noreply.git.example.com>",
		"127.0.0.1:3000":       "konflux <123456+konflux[bot]@users.noreply.127.0.0.1>",
	} {
		if got := basicAuthGitAuthor("konflux", host); got != want {
			t.Errorf("basicAuthGitAuthor(%q) = %q, want %q", host, got, want)
		}
	}
}

// A component on a host that names no forge, without the git-provider annotation:
// an immediate nudge is refused as build-service refuses it (the error says to set
// the annotation), but a build a ChangeGroup hands back is nudged on GitHub
// Enterprise, where the group's pull request for it went, instead of failing for
// good after the group had worked there.
func TestLaunchOnAHostThatNamesNoForge(t *testing.T) {
	corp := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "corp-bundle", Namespace: "tenant"},
		Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "corp-bundle", Source: mirrorv1alpha1.ComponentSource{
			GitSource: &mirrorv1alpha1.GitSource{URL: "https://git.corp.example/org/bundle", Revision: "main"}}}}
	scm := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scm-corp", Namespace: "tenant", Labels: map[string]string{
		credentials.LabelCredentials: credentials.LabelCredentialsSCM, credentials.LabelSCMHost: "git.corp.example"}},
		Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"username": []byte("bot"), "password": []byte(unitToken)}}
	u := newUnitWorld(t, "", corp, scm)

	immediate := unitRequest(renovateapi.RunName("nudge/tenant/uid/corp-bundle", 1))
	immediate.Nudged = "corp-bundle"
	_, err := u.env.ExecuteActivity(u.a.LaunchRenovate, immediate)
	require.ErrorContains(t, err, "set the component's git-provider annotation")
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.True(t, appErr.NonRetryable())

	handedBack := unitRequest(renovateapi.RunName("nudge/tenant/uid2/corp-bundle", 1))
	handedBack.WorkflowID, handedBack.Nudged, handedBack.HandedBackBy = "nudge/tenant/uid2/corp-bundle", "corp-bundle", "bundle-update"
	require.True(t, u.launch(handedBack).Created)
	_, cfg, _, _ := u.createdFor(handedBack.Name, "corp-bundle")
	require.Equal(t, "github", cfg.Platform)
	require.Equal(t, "https://git.corp.example/api/v3/", cfg.Endpoint)
}
