// Package prgroups_test runs ADR 29's PR groups end to end: a real kube-apiserver,
// a real Temporal dev server, the bridge and the worker in this process, and the
// GitHub emulator over HTTP (people open and merge PRs there; its webhooks reach the
// bridge). Pipelines as Code is simulated: the tests create the build PipelineRuns
// it would.
package prgroups_test

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
	"github.com/nudgeflow/nudgeflow/test/localbridge"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
	"github.com/nudgeflow/nudgeflow/test/world/worldbridge"
	nfworker "github.com/nudgeflow/nudgeflow/worker"
	prgroupwf "github.com/nudgeflow/nudgeflow/workflows/prgroup"
)

const (
	taskQueue     = "prgroups-e2e"
	forgeToken    = "ghs_prgroupsTokenThatMustNeverAppearInAHistory01"
	webhookSecret = "prgroups-webhook-secret"
)

var (
	bot   = forge.Signature{Name: "nudgeflow[bot]", Email: "nudgeflow-bot@users.noreply.127.0.0.1"}
	human = githubemu.User{Login: "dev", Name: "A Developer", Email: "dev@example.com"}
	emu   *githubemu.Server
)

// settings: an hour's poll, so the scenarios show that the forge's webhooks and
// the push builds' wake-ups are what moves a PR group, not its poll.
var settings = prgroupwf.Settings{PollInterval: time.Hour}

func TestMain(m *testing.M) {
	os.Exit(world.Main(m, world.Options{
		WebhookManifests: []string{filepath.Join(localenv.RepoRoot(), "deploy", "webhooks")},
		Start:            startStack,
	}))
}

func startStack(w *world.World) (func(), error) {
	emu = githubemu.New()
	emu.AddToken(forgeToken, githubemu.User{Login: "nudgeflow[bot]", Name: bot.Name, Email: bot.Email})
	b, err := worldbridge.Start(w, worldbridge.Options{Bridge: localbridge.Options{
		Deps:      bridge.Deps{TaskQueue: taskQueue, PRGroup: settings},
		ForgeHook: &localbridge.ForgeHook{Secret: webhookSecret, Forges: []localbridge.Forge{emu}},
	}})
	if err != nil {
		return nil, err
	}
	wk := nfworker.New(w.TemporalClient, nfworker.Deps{
		Kube: w.Kube, Temporal: w.TemporalClient, StandInForge: world.IsStandInForge,
		PullRequest: changegrouppr.Config{Bot: bot, Transport: http.DefaultTransport},
	}, nfworker.Options{TaskQueue: taskQueue, FailWorkflowOnPanic: true})
	if err := wk.Start(); err != nil {
		_ = b.Stop()
		return nil, err
	}
	var _ sdkworker.Worker = wk
	return func() {
		wk.Stop()
		_ = b.Stop()
		emu.Close()
	}, nil
}
