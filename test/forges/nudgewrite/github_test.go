package nudgewrite_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/contracts/nudgewriteapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
)

// emuRepo is a repository on the GitHub emulator, written with a personal access
// token of a basic-auth SCM Secret (the App's token is left to Renovate).
type emuRepo struct {
	t    *testing.T
	emu  *githubemu.Server
	name string
}

const ghToken = "ghp_Sup3rSecretTokenOfTheTenant"

func newEmuRepo(t *testing.T, files map[string]string) *emuRepo {
	t.Helper()
	emu := githubemu.New()
	t.Cleanup(emu.Close)
	emu.AddToken(ghToken, githubemu.User{Login: "tenant-bot", Name: "tenant-bot", Email: "tenant-bot@example.com"})
	g := &emuRepo{t: t, emu: emu, name: nextRepoName()}
	emu.CreateRepo("org", g.name, "main", files)
	for _, l := range []string{renovate.NudgeLabel, "team-x", "team-y"} {
		require.NoError(t, emu.CreateLabel("org", g.name, l, "00aabb"))
	}
	return g
}

func (g *emuRepo) provider() string   { return "github" }
func (g *emuRepo) url() string        { return g.emu.URL() + "/org/" + g.name }
func (g *emuRepo) secretUser() string { return "tenant-bot" }
func (g *emuRepo) token() string      { return ghToken }
func (g *emuRepo) head(b string) (commit, bool) {
	c, ok := g.emu.Head("org", g.name, b)
	return commit(c), ok
}
func (g *emuRepo) fileAt(ref, path string) (string, bool) {
	return g.emu.FileAt("org", g.name, ref, path)
}
func (g *emuRepo) pr(number int) pr {
	p, ok := g.emu.PR("org", g.name, number)
	require.True(g.t, ok)
	return pr{Number: p.Number, Title: p.Title, Body: p.Body, State: p.State, Head: p.Head, Base: p.Base, Merged: p.Merged, Labels: p.Labels}
}
func (g *emuRepo) prs() []pr {
	var out []pr
	for _, p := range g.emu.PRs("org", g.name) {
		out = append(out, g.pr(p.Number))
	}
	return out
}
func (g *emuRepo) humanCommit(b string, files map[string]string, message string) (string, error) {
	return g.emu.HumanCommit("org", g.name, b, githubemu.User{Login: "dev", Name: "Dev", Email: "dev@example.com"}, files, message)
}
func (g *emuRepo) editBody(n int, body string) error { return g.emu.EditBody("org", g.name, n, body) }
func (g *emuRepo) closePR(n int) error               { return g.emu.ClosePR("org", g.name, n) }
func (g *emuRepo) breakRepo() error {
	g.emu.FailNext(1000, http.StatusNotFound, 0)
	return nil
}

func TestGitHub(t *testing.T) {
	t.Run("lifecycle", func(t *testing.T) {
		old := digest(1)
		g := newEmuRepo(t, files(old))
		lifecycle(t, newFixture(t, g, map[string]string{"labels": "team-x, not-defined"}), old)
		// Labels by name after opening, as Renovate's GitHub platform: GitHub
		// creates those the repository lacks.
		require.ElementsMatch(t, []string{renovate.NudgeLabel, "team-x", "not-defined"}, g.pr(1).Labels)
	})
	t.Run("labels-follow-the-configmap", func(t *testing.T) {
		labelsFollow(t, newFixture(t, newEmuRepo(t, files(digest(30))), map[string]string{"labels": "team-x"}))
	})
	t.Run("already-current", func(t *testing.T) {
		d := digest(7)
		alreadyCurrent(t, newFixture(t, newEmuRepo(t, files(d)), nil), d)
	})
	// Platform automerge on a repository that does not allow auto-merge (the
	// emulator's autoMergeAllowed is false): Renovate enables nothing there, and
	// neither does the writer; the PR says automerge is on, as Renovate's.
	t.Run("platform-automerge-not-allowed", func(t *testing.T) {
		g := newEmuRepo(t, files(digest(10)))
		f := newFixture(t, g, map[string]string{"automerge": "true"})
		res := f.write(build(digest(11), time.Now()))
		require.Equal(t, nudgewriteapi.OutcomeOpened, res.Outcome, "%+v", res)
		p := g.pr(res.PR)
		require.Contains(t, p.Body, "**Automerge**: Enabled.")
		require.Equal(t, "open", p.State)
		require.False(t, p.Merged)
		require.Contains(t, f.logs.text(), "INFO auto-merge ", "the writer asked the repository")
		require.NotContains(t, f.logs.text(), "refused its auto-merge", "and read its settings")
	})
	t.Run("fallback-branch-automerge", func(t *testing.T) {
		fallback(t, newFixture(t, newEmuRepo(t, files(digest(10))), map[string]string{"automerge": "true", "automergeType": "branch"}), `automergeType "branch"`)
	})
	// With the GitHub App installed, Renovate pushes with its token (before the
	// basic-auth Secret, build-service's order): platform-native commits whose
	// author is the App's bot; so does the writer.
	t.Run("app-lifecycle", func(t *testing.T) {
		old := digest(1)
		g := newEmuRepo(t, files(old))
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		require.NoError(t, err)
		g.emu.RegisterApp(4242, "konflux-app", &key.PublicKey)
		app := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: forge.DefaultAppSecret.Namespace, Name: forge.DefaultAppSecret.Name},
			Data: map[string][]byte{forge.KeyAppID: []byte("4242"),
				forge.KeyAppPrivateKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})}}
		f := newFixture(t, g, map[string]string{"labels": "team-x, not-defined"}, app)
		bot := g.emu.AppBotUser()
		f.author = renovate.AppGitAuthor(forge.Signature{Name: bot.Login, Email: bot.Email})
		require.Equal(t, "konflux-app <"+bot.Email+">", f.author)
		lifecycle(t, f, old)
		require.NotEmpty(t, g.emu.WriteScopes(), "the App's token wrote")
		for _, s := range g.emu.WriteScopes() {
			require.Equal(t, "org/"+g.name, s, "every write with the App's token for the one repository")
		}
	})
	t.Run("token-stays-in-the-worker", func(t *testing.T) {
		tokenStays(t, newFixture(t, newEmuRepo(t, files(digest(12))), nil))
	})
}
