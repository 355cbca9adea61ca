package nudges

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/test/landingforge"
	"github.com/nudgeflow/nudgeflow/test/ociregistry"
	"github.com/nudgeflow/nudgeflow/test/plrunner"
	"github.com/nudgeflow/nudgeflow/test/world"
	"github.com/nudgeflow/nudgeflow/workflows/validatednudge"
)

// landing is one test's real delivery path: a TLS registry the builds push to, a
// forge holding the nudged repository, and the PipelineRun runner with the
// pinned Renovate running this namespace's nudge runs.
type landing struct {
	reg    *ociregistry.Registry
	forge  landingforge.Forge
	runner *plrunner.Runner
}

// startRegistry starts the TLS registry the builds push to and gives nudgeflow
// what a cluster gives it: the registry's CA in the trusted bundle of the
// worker's namespace. The worker reads one bundle for every run, so the forges'
// subtests share this registry as a cluster's tenants share quay.io.
func startRegistry(t *testing.T) *ociregistry.Registry {
	t.Helper()
	require.NotEmpty(t, os.Getenv("RENOVATE"), "set RENOVATE=$(hack/tools.sh path renovate)")
	reg, ca, err := ociregistry.StartWithNewCA("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, reg.Close()) })
	f := newFixture(t)
	f.trustedCA(string(ca.PEM))
	return reg
}

// startLanding starts forge and the runner for f's namespace, and gives nudgeflow
// what a tenant gives it: the forge bot's token as the SCM Secret labelled for
// the forge's host.
func startLanding(f *fixture, reg *ociregistry.Registry, forgeName string) *landing {
	t := f.t.(*testing.T)
	forge := landingforge.Start(t, forgeName)
	u, err := url.Parse(forge.RepoURL("tenant", "any"))
	require.NoError(t, err)
	f.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "scm-" + forge.Name(), Labels: map[string]string{
			credentials.LabelCredentials: credentials.LabelCredentialsSCM, credentials.LabelSCMHost: u.Hostname()}},
		Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{corev1.BasicAuthUsernameKey: []byte(forge.Username()), corev1.BasicAuthPasswordKey: []byte(forge.Token())},
	})

	watcher, err := ctrlclient.NewWithWatch(f.w.Config(), ctrlclient.Options{Scheme: kube.NewScheme()})
	require.NoError(t, err)
	l := &landing{reg: reg, forge: forge,
		runner: &plrunner.Runner{Client: watcher, StateDir: t.TempDir(), ToolPath: filepath.Dir(os.Getenv("RENOVATE")), Namespace: f.ns}}
	stop := l.runner.Start(context.Background())
	t.Cleanup(func() { require.NoError(t, stop()) })
	return l
}

// repo creates owner/name on the forge with files on main, and the nudge label
// (Renovate applies only labels that exist, as a Konflux tenant creates them).
// It returns the repository's URL, a Component's git URL.
func (l *landing) repo(t *testing.T, owner, name string, files map[string]string) string {
	t.Helper()
	l.forge.CreateRepo(t, owner, name, "main", files)
	l.forge.CreateLabel(t, owner, name, renovate.NudgeLabel)
	return l.forge.RepoURL(owner, name)
}

// operandNudgesBundle sets up what both landing tests nudge: Component operand
// building builtRepo, Component bundle whose repository's Dockerfile refers to
// builtRepo's v0 image (pushed here), and the NudgeConfig holding edge.
func (l *landing) operandNudgesBundle(f *fixture, builtRepo string, edge konfluxv1alpha1.NudgeRelationship) {
	t := f.t.(*testing.T)
	oldDigest, err := l.reg.PushImage(f.ctx, strings.TrimPrefix(builtRepo, l.reg.Host+"/")+":v0")
	require.NoError(t, err)
	bundleURL := l.repo(t, "tenant", "bundle", map[string]string{
		"Dockerfile": "FROM " + builtRepo + "@" + oldDigest + "\n",
	})
	f.create(&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "operand"},
		Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "operand", ContainerImage: builtRepo}})
	// 127.0.0.1 names no forge: the git-provider annotation does, as a tenant
	// on a self-hosted forge sets it.
	f.component("bundle", bundleURL, map[string]string{mirrorv1alpha1.AnnotationGitProvider: l.forge.Platform()})
	f.nudgeConfig(edge)
}

// log is the end of a run's log (the runner's folder goes with the test).
func (l *landing) log(f *fixture, run string) string {
	const tail = 6000
	b := l.runner.ReadLog(f.ns, run)
	if len(b) > tail {
		b = b[len(b)-tail:]
	}
	return b
}

// build pushes a new image to imageRepo (a repository of the registry) under
// tag and records component's push build as succeeded with that image's real
// digest; n orders the builds.
func (l *landing) build(f *fixture, component, imageRepo, tag string, n int) (imageURL, digest string) {
	f.t.Helper()
	imageURL = imageRepo + ":" + tag
	digest, err := l.reg.PushImage(f.ctx, strings.TrimPrefix(imageURL, l.reg.Host+"/"))
	require.NoError(f.t, err)
	plr := f.newBuild(component, n, nil, nil)
	start := time.Date(2026, 11, 1, 10, n, 0, 0, time.UTC)
	require.NoError(f.t, world.SetStatus(f.ctx, f.w.Kube, plr, func() {
		konflux.SucceededBuild{ImageURL: imageURL, Digest: digest, Started: start, Completed: time.Now()}.WriteStatus(plr)
	}))
	return imageURL, digest
}

// A validated nudge lands for real only after its gate passes, on each forge:
// the build waits in the edge's workflow with no Renovate run and no pull
// request; the gating Snapshot passes; nudgeflow launches the run, the runner
// runs the pinned Renovate on it, and the nudge PR on the forge carries the
// built digest. The forges run in parallel, each in its own namespace.
func TestValidatedNudgeLandsOnlyAfterTheGatePasses(t *testing.T) {
	onEveryForge(t, validatedNudgeLandsAfterTheGate)
}

// onEveryForge runs land on each forge in parallel subtests, sharing one registry.
func onEveryForge(t *testing.T, land func(t *testing.T, reg *ociregistry.Registry, forgeName string)) {
	reg := startRegistry(t)
	for _, name := range landingforge.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			land(t, reg, name)
		})
	}
}

func validatedNudgeLandsAfterTheGate(t *testing.T, reg *ociregistry.Registry, forgeName string) {
	f := newFixture(t)
	l := startLanding(f, reg, forgeName)
	// One image repository per forge: the subtests push at once.
	builtRepo := reg.Host + "/tenant-" + forgeName + "/operand"
	l.operandNudgesBundle(f, builtRepo, validated("operand", "bundle", "gate"))

	imageURL, digest := l.build(f, "operand", builtRepo, "rev1", 1)
	pullSpec := builtRepo + "@" + digest
	f.validatedState("operand", "bundle", "build 1 waits for its gate", func(st validatednudge.State) bool {
		return st.Pending != nil && st.Pending.PullSpec == pullSpec
	})
	require.Empty(t, f.renovateRuns(), "no Renovate run before the gate passes")
	require.Empty(t, l.forge.PRs(t, "tenant", "bundle"), "no nudge PR before the gate passes")

	f.snapshot("gate-1", "gate", map[string]string{"operand": pullSpec}, true)
	run := f.waitRuns(1)[0]
	require.Equal(t, imageURL, run.Annotations[renovate.AnnotationNudgingImage])
	got, err := plrunner.WaitFor(f.ctx, f.w.Kube, f.ns, run.Name, 5*time.Minute, plrunner.Ended)
	require.NoError(t, err, "the runner ends the Renovate run")
	ended := got.Status.GetCondition(apis.ConditionSucceeded)
	runLog := l.log(f, run.Name)
	require.Equal(t, corev1.ConditionTrue, ended.Status, "%+v; Renovate's log:\n%s", ended, runLog)

	prs := l.forge.PRs(t, "tenant", "bundle")
	require.Len(t, prs, 1, "Renovate's log:\n%s", runLog)
	require.True(t, strings.HasPrefix(prs[0].HeadRef, "konflux/component-updates/"), prs[0].HeadRef)
	dockerfile, ok := l.forge.FileAt(t, "tenant", "bundle", prs[0].HeadRef, "Dockerfile")
	require.True(t, ok)
	require.Equal(t, "FROM "+pullSpec+"\n", dockerfile)
	f.validatedState("operand", "bundle", "the nudge recorded as succeeded", func(st validatednudge.State) bool {
		return len(st.Nudges) == 1 && st.Nudges[0].Digest == digest
	})
	t.Logf("renovate-e2e forge=%s case=validated-after-gate files_bumped=1 prs=%d", forgeName, len(prs))
}
