// Package changegroup_test runs ChangeGroups end to end: a real kube-apiserver with
// nudgeflow's webhooks registered, a real Temporal dev server, the bridge and the
// worker in this process, the GitHub and GitLab emulators over HTTP and a real Gitea
// server (the Forgejo API).
package changegroup_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdkworker "go.temporal.io/sdk/worker"

	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	glemu "github.com/nudgeflow/nudgeflow/test/forgeemu/gitlab"
	"github.com/nudgeflow/nudgeflow/test/localbridge"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
	"github.com/nudgeflow/nudgeflow/test/world/worldbridge"
	nfworker "github.com/nudgeflow/nudgeflow/worker"
	cgwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
)

const (
	taskQueue     = "changegroup-e2e"
	forgeToken    = "ghs_e2eTokenThatMustNeverAppearInAHistory0001"
	webhookSecret = "e2e-webhook-secret"
)

var bot = forge.Signature{Name: "nudgeflow[bot]", Email: "nudgeflow-bot@users.noreply.127.0.0.1"}

// stack is what the package's tests share.
type stack struct {
	emu *githubemu.Server
	// forges are every forge's harness, GitHub first (emu's).
	forges []forgeHarness
	// forgejo is the real Gitea server's harness (started by its first use).
	forgejo *forgejoForge
	worker  sdkworker.Worker
}

var shared stack

func TestMain(m *testing.M) {
	os.Exit(world.Main(m, world.Options{
		WebhookManifests: []string{filepath.Join(localenv.RepoRoot(), "deploy", "webhooks")},
		Start:            startStack,
	}))
}

// settings are short so scenarios run in seconds; the debounce still coalesces bursts.
var settings = cgwf.Settings{Debounce: time.Second, PollInterval: 3 * time.Second}

func startStack(w *world.World) (func(), error) {
	emu := githubemu.New()
	emu.AddToken(forgeToken, githubemu.User{Login: "nudgeflow[bot]", Name: bot.Name, Email: bot.Email})
	// Both emulators listen on 127.0.0.1: the namespace's one SCM Secret serves both.
	gl := glemu.New()
	gl.AddToken(forgeToken, glemu.User{Username: "project_1_bot_nudgeflow", Name: bot.Name, Email: bot.Email})

	b, err := worldbridge.Start(w, worldbridge.Options{Bridge: localbridge.Options{
		Deps:      bridge.Deps{TaskQueue: taskQueue, ChangeGroup: settings},
		ForgeHook: &localbridge.ForgeHook{Secret: webhookSecret, Forges: []localbridge.Forge{emu, gl}},
	}})
	if err != nil {
		return nil, err
	}
	wk := startWorker(w)
	if err := wk.Start(); err != nil {
		_ = b.Stop()
		return nil, err
	}
	// The Gitea server's bot is named like the emulators' (the SCM Secret's username,
	// localenv.ForgejoBot); its token is the server's own.
	fj := &forgejoForge{dir: filepath.Join(w.LogDir, "forgejo"), hookURL: b.ForgeHookURL}
	shared = stack{emu: emu, forges: []forgeHarness{githubForge{emu}, gitlabForge{gl}, fj}, forgejo: fj, worker: wk}
	return func() {
		wk.Stop()
		_ = b.Stop()
		emu.Close()
		gl.Close()
		fj.stop()
	}, nil
}

// startWorker reads and writes the cluster directly, as the production worker does.
func startWorker(w *world.World) sdkworker.Worker {
	c := w.TemporalClient
	return nfworker.New(c, nfworker.Deps{
		Kube: w.Kube, Temporal: c, StandInForge: world.IsStandInForge,
		PullRequest: changegrouppr.Config{Bot: bot, Transport: http.DefaultTransport},
	}, nfworker.Options{TaskQueue: taskQueue, FailWorkflowOnPanic: true})
}
