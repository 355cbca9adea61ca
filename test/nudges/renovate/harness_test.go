package renovate_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	"github.com/nudgeflow/nudgeflow/test/landingforge"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/ociregistry"
	"github.com/nudgeflow/nudgeflow/test/plrunner"
)

// world is what every case on every forge shares, started once per test binary
// (the first test that asks) and stopped by TestMain: the API server and the
// runner (test/plrunner, with the pinned Renovate), and two TLS registries
// signed by one CA, one public and one that answers only with its credentials.
type world struct {
	*plrunner.World
	ca       *ociregistry.CA
	registry *ociregistry.Registry
	private  *ociregistry.Registry
	// privateUser and privatePassword are the private registry's credentials:
	// what a tenant's pull secret holds.
	privateUser, privatePassword string
	// slots bounds the Renovate runs at once: each is a Node process of ~270 MB
	// and most of a core while it runs, and three forges' cases start together.
	slots chan struct{}
	// state is the runner's directory: run logs and work directories. TestMain
	// removes it after a passing run and keeps it, saying where, after a failure.
	state string
	stop  func() error
}

var (
	worldOnce sync.Once
	theWorld  *world
	worldErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if theWorld != nil {
		if err := theWorld.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the Renovate test world:", err)
			code = 1
		}
		if code == 0 {
			_ = os.RemoveAll(theWorld.state)
		} else {
			fmt.Fprintln(os.Stderr, "the Renovate runs' logs are kept in", filepath.Join(theWorld.state, "runs"))
		}
	}
	os.Exit(code)
}

// sharedWorld starts the world on first use; every later caller gets the same.
func sharedWorld(t *testing.T) *world {
	t.Helper()
	worldOnce.Do(func() { theWorld, worldErr = startWorld() })
	require.NoError(t, worldErr, "start the Renovate test world")
	return theWorld
}

func startWorld() (w *world, err error) {
	renovateBin, err := localenv.Renovate()
	if err != nil {
		return nil, err
	}
	var stops []func() error
	stopAll := func() error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, stopAll())
		}
	}()
	ca, err := ociregistry.NewCA()
	if err != nil {
		return nil, err
	}
	cert, err := ca.ServingCert("127.0.0.1")
	if err != nil {
		return nil, err
	}
	reg, err := ociregistry.Start("127.0.0.1:0", cert, ca.Pool())
	if err != nil {
		return nil, err
	}
	stops = append(stops, reg.Close)
	user, password := "tenant-puller", randomHex(16)
	priv, err := ociregistry.StartPrivate("127.0.0.1:0", cert, ca.Pool(), user, password)
	if err != nil {
		return nil, err
	}
	stops = append(stops, priv.Close)
	state, err := os.MkdirTemp("", "renovate-e2e-")
	if err != nil {
		return nil, fmt.Errorf("make the runner's state directory: %w", err)
	}
	pw, err := plrunner.StartWorld(state, filepath.Dir(renovateBin))
	if err != nil {
		return nil, err
	}
	stops = append(stops, pw.Stop)
	return &world{World: pw, ca: ca, registry: reg, private: priv, privateUser: user, privatePassword: password,
		slots: make(chan struct{}, 3), state: state, stop: stopAll}, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// forgeWithCA is a forge served over TLS with a certificate of its own CA
// (optional beside landingforge.Forge): its PEM joins the run's trusted-CA bundle,
// as a cluster's trusted bundle holds every CA its forges and registries use.
type forgeWithCA interface {
	CAPEM() []byte
}

// tenant is one forge's namespace in the shared API server, with its repos on
// the forge under one owner.
type tenant struct {
	w         *world
	forge     landingforge.Forge
	namespace string
	owner     string
}

// newTenant starts the forge and makes its namespace.
func newTenant(t *testing.T, w *world, forge landingforge.Forge) *tenant {
	t.Helper()
	ns := "tenant-" + forge.Name()
	err := w.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	return &tenant{w: w, forge: forge, namespace: ns, owner: "tenant"}
}

// nudge is one Renovate run as nudgeflow launches it: a build of Nudging
// (Image = repo:tag, Digest its IMAGE_DIGEST) nudging Nudged, whose source is
// Repo on the tenant's forge.
type nudge struct {
	Run               string // the PipelineRun's name
	Nudging, Nudged   string
	Repo              string
	Image, Digest     string
	DistributionRepos []string
	// HostRules are the registry credentials nudgeflow found for the nudging
	// image (the tenant's pull secret); nil runs without, as nudgeflow does
	// when it finds none.
	HostRules []renovate.HostRule
	// BuiltAt is the build's start: the run's commit carries it, and its step
	// compares it with the nudge branch's head (zero: neither, as for a build
	// whose start is unknown).
	BuiltAt time.Time
}

// ran is how a run ended.
type ran struct {
	Run     *tektonv1.PipelineRun
	LogPath string
	Log     string
	// Status is what nudgeflow reads of the run (renovate.StatusOf).
	Status renovaterun.RunStatus
	// Cost is the runner's line for the Renovate step: exit code, wall, CPU, RSS.
	Cost string
}

// runTimeout bounds one Renovate run, waiting for a slot included: one takes
// about 3 s alone on this machine.
const runTimeout = 5 * time.Minute

// launch creates the run, its config ConfigMap, Secret and trusted-CA ConfigMap
// exactly as nudgeflow's LaunchRenovate writes them for this forge, then
// releases it. It returns a function that releases the run's slot.
func (tn *tenant) launch(t *testing.T, n nudge) (done func()) {
	t.Helper()
	ctx := context.Background()
	select {
	case tn.w.slots <- struct{}{}:
	case <-time.After(runTimeout):
		t.Fatalf("no Renovate slot free within %s", runTimeout)
	}
	var once sync.Once
	done = func() { once.Do(func() { <-tn.w.slots }) }
	t.Cleanup(done)

	builtRepo, tag, ok := cutLast(n.Image, ":")
	require.True(t, ok, "image %q has a tag", n.Image)
	req := renovateapi.LaunchRequest{Namespace: tn.namespace, Name: n.Run, WorkflowID: "nudge-" + n.Run, Attempt: 1, Nudging: n.Nudging, Nudged: n.Nudged, Build: imagebuild.Build{ImageURL: n.Image, Digest: n.Digest, BuildPipelineRun: n.Nudging + "-build", RepoAtSHA: repoAtSHA(n.Nudging), BuiltAt: n.BuiltAt}}
	owner, name, ok := strings.Cut(n.Repo, "/")
	require.True(t, ok, "repo %q is owner/name", n.Repo)
	plr, objs := renovate.PipelineRunFor(&renovate.Activities{}, req, n.HostRules != nil, true, renovate.BranchCheck{
		GitURL: tn.forge.RepoURL(owner, name) + ".git", Platform: tn.forge.Platform(), Branch: nudgeBranchOf(n)})
	cfg, err := renovate.GenerateConfig(renovate.ConfigInput{
		Platform: tn.forge.Platform(), Endpoint: tn.forge.Endpoint(),
		Username: tn.forge.Username(), GitAuthor: tn.forge.GitAuthor(),
		Repository: n.Repo, BaseBranch: "main", Nudging: n.Nudging, Nudged: n.Nudged,
		BuiltRepo: builtRepo, BuiltTag: tag, DistributionRepos: n.DistributionRepos, RepoAtSHA: req.RepoAtSHA,
		FileMatch: renovate.FileMatch(renovate.Options{}, ""), BuiltAt: n.BuiltAt, Run: n.Run,
	}).JSON()
	require.NoError(t, err)
	secret := map[string]string{objs.TokenKey: tn.forge.Token()}
	if n.HostRules != nil {
		rules, err := json.Marshal(n.HostRules)
		require.NoError(t, err)
		secret[objs.HostRulesKey] = string(rules)
	}
	c := tn.w.Client
	require.NoError(t, c.Create(ctx, plr))
	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: objs.ConfigMap, Namespace: tn.namespace},
		Data: map[string]string{objs.ConfigKey: string(cfg)}}))
	require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: objs.Secret, Namespace: tn.namespace},
		StringData: secret}))
	bundle := string(tn.w.ca.PEM)
	if withCA, ok := tn.forge.(forgeWithCA); ok {
		bundle += string(withCA.CAPEM())
	}
	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: objs.CAConfigMap, Namespace: tn.namespace},
		Data: map[string]string{renovate.CABundleKey: bundle}}))
	require.NoError(t, plrunner.Release(ctx, c, tn.namespace, n.Run), "nudgeflow releases the run it created held")
	return done
}

// wait waits for run name to end and reads how.
func (tn *tenant) wait(t *testing.T, name string) ran {
	t.Helper()
	plr, err := plrunner.WaitFor(context.Background(), tn.w.Client, tn.namespace, name, runTimeout, plrunner.Ended)
	logPath := tn.w.Runner.LogPath(tn.namespace, name)
	require.NoError(t, err, "log %s", logPath)
	out := ran{Run: plr, LogPath: logPath, Log: tn.w.Runner.ReadLog(tn.namespace, name), Status: renovaterun.StatusOf(plr)}
	if m := stepCost.FindStringSubmatch(out.Log); m != nil {
		out.Cost = m[1]
	}
	return out
}

// runNudge launches n and waits for it to end.
func (tn *tenant) runNudge(t *testing.T, n nudge) ran {
	t.Helper()
	done := tn.launch(t, n)
	defer done()
	return tn.wait(t, n.Run)
}

var stepCost = regexp.MustCompile(`--- step renovate (exited \d+: .*)`)

// repoAtSHA is the nudging component's source link at its commit, as the build
// annotates it (GitHub's ?rev= form).
func repoAtSHA(component string) string {
	return "https://git.example.com/tenant/" + component + "?rev=" + strings.Repeat("ab", 20)
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
