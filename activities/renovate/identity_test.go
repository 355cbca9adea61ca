package renovate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// A basic-auth Secret's user name is free text. Renovate is never told it as its
// username (it resolves the token's login itself); gitAuthor is build-service's
// where Renovate pushes over git, and left to Renovate for a GitHub installation
// token, whose commits GitHub authors as its bot.
func TestBasicAuthIdentityIsTheTokens(t *testing.T) {
	for _, tc := range []struct {
		name, platform, host, user, token string
		wantAuthor                        string
	}{
		{"github PAT", "github", "github.example.com", "nudgeflow", "ghp_x", "nudgeflow <123456+nudgeflow[bot]@users.noreply.github.example.com>"},
		{"github fine-grained PAT", "github", "github.com", "free text", "github_pat_x", "free text <123456+free text[bot]@users.noreply.github.com>"},
		{"github installation token in a Secret", "github", "127.0.0.1:8080", "nudgeflow", "ghs_x", ""},
		{"gitlab", "gitlab", "gitlab.com", "nudgeflow", "glpat-x", "nudgeflow <123456+nudgeflow[bot]@users.noreply.gitlab.com>"},
		{"gitlab token that looks like GitHub's", "gitlab", "gitlab.com", "nudgeflow", "ghs_x", "nudgeflow <123456+nudgeflow[bot]@users.noreply.gitlab.com>"},
		{"forgejo", "forgejo", "codeberg.org", "nudgeflow", "0123abcd", "nudgeflow <123456+nudgeflow[bot]@users.noreply.codeberg.org>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			username, author := BasicAuthIdentity(tc.platform, tc.host, tc.user, tc.token)
			require.Empty(t, username, "Renovate resolves the token's login")
			require.Equal(t, tc.wantAuthor, author)
		})
	}
}

// The launch writes no username from the Secret into the config, and a GitHub
// installation token kept in a basic-auth Secret gets no gitAuthor: the commit
// body signs off with the gitAuthor Renovate commits as.
func TestLaunchLeavesTheTokensIdentityToRenovate(t *testing.T) {
	u := newUnitWorld(t, "")
	u.launch(unitRequest("run-pat"))
	_, cfg, raw, _ := u.created("run-pat")
	require.Empty(t, cfg.Username)
	require.NotContains(t, string(raw), `"username"`, "left out, not empty")
	require.Equal(t, "bot <123456+bot[bot]@users.noreply.github.example.com>", cfg.GitAuthor)
	require.Contains(t, cfg.PackageRules[1].CommitBody, "Signed-off-by: bot <123456+bot[bot]@users.noreply.github.example.com>")

	app := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scm-app", Namespace: "tenant", Labels: map[string]string{
		credentials.LabelCredentials: credentials.LabelCredentialsSCM, credentials.LabelSCMHost: "ghe.example.com"}},
		Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"username": []byte("nudgeflow"), "password": []byte("ghs_installationtoken")}}
	ghe := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "ghe-bundle", Namespace: "tenant",
		Annotations: map[string]string{mirrorv1alpha1.AnnotationGitProvider: "github"}},
		Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "ghe-bundle", Source: mirrorv1alpha1.ComponentSource{
			GitSource: &mirrorv1alpha1.GitSource{URL: "https://ghe.example.com/org/bundle", Revision: "main"}}}}
	u = newUnitWorld(t, "", app, ghe)
	req := unitRequest("run-ghs")
	req.Nudged = "ghe-bundle"
	u.launch(req)
	_, cfg, raw, _ = u.createdFor("run-ghs", "ghe-bundle")
	require.Empty(t, cfg.Username)
	require.Empty(t, cfg.GitAuthor)
	require.NotContains(t, string(raw), `"gitAuthor"`)
	require.Contains(t, cfg.PackageRules[1].CommitBody, "Signed-off-by: {{{gitAuthor}}}")
	require.NotContains(t, u.logs.String(), "ghs_installationtoken", "no token in a log line")
}

// A build without build-service's repo annotation: the nudge names Pipelines as
// Code's commit on the nudging Component's repository, and never an empty source.
func TestLaunchNamesTheSourceOfABuildWithoutTheRepoAnnotation(t *testing.T) {
	operand := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "operand-pac", Namespace: "tenant"},
		Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "operand-pac", ContainerImage: "quay.io/org/operand",
			Source: mirrorv1alpha1.ComponentSource{GitSource: &mirrorv1alpha1.GitSource{URL: "https://github.example.com/org/operand.git"}}}}
	sha := strings.Repeat("c", 40)
	build := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "operand-pac-on-push", Namespace: "tenant",
		Annotations: map[string]string{konflux.AnnotationPaCSHA: sha}}}
	u := newUnitWorld(t, "", operand, build)

	req := unitRequest("run-pac")
	req.Nudging, req.BuildPipelineRun, req.RepoAtSHA = "operand-pac", "operand-pac-on-push", ""
	u.launch(req)
	plr, cfg, _, _ := u.created("run-pac")
	link := "https://github.example.com/org/operand?rev=" + sha
	require.Equal(t, "Image created from '"+link+"'", cfg.PackageRules[1].PRHeader)
	require.Equal(t, sha, konflux.NudgingCommitKey.Get(plr.Annotations))

	// The build run is gone: the Component's repository, and no empty commit annotation.
	req = unitRequest("run-pruned")
	req.WorkflowID = "nudge/tenant/uid-pruned/bundle"
	req.Nudging, req.BuildPipelineRun, req.RepoAtSHA = "operand-pac", "pruned", ""
	u.launch(req)
	plr, cfg, _, _ = u.created("run-pruned")
	require.Equal(t, "Image created from 'https://github.example.com/org/operand'", cfg.PackageRules[1].PRHeader)
	_, ok := konflux.NudgingCommitKey.Lookup(plr.Annotations)
	require.False(t, ok, "no nudging-commit without a commit")

	// Nothing names a source: the header names the component, not ''.
	cfg = GenerateConfig(ConfigInput{Platform: "github", Nudging: "operand", BuiltRepo: "quay.io/org/operand"})
	require.Equal(t, "Image created by a build of component operand", cfg.PackageRules[1].PRHeader)
	require.NotContains(t, cfg.PackageRules[1].CommitBody, "''")
}
