// Package prgroups_test runs ADR 29's PR groups end to end: a real kube-apiserver,
// a real Temporal dev server, the bridge and the worker in this process, and the
// GitHub emulator over HTTP (people open and merge PRs there; its webhooks reach the
// bridge). Pipelines as Code is simulated: the tests create the build PipelineRuns
// it would.
package prgroups_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdkworker "go.temporal.io/sdk/worker"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nudgeflow/nudgeflow/activities/forge"
	"github.com/nudgeflow/nudgeflow/activities/pullrequest"
	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	githubemu "github.com/nudgeflow/nudgeflow/internal/forgeemu/github"
	"github.com/nudgeflow/nudgeflow/internal/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
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

// settings: a short poll so a lost webhook costs seconds; the webhooks are the
// normal path.
var settings = prgroupwf.Settings{PollInterval: 2 * time.Second}

func TestMain(m *testing.M) {
	os.Exit(world.Main(m, world.Options{
		WebhookManifests: []string{filepath.Join(localenv.RepoRoot(), "deploy", "webhooks")},
		Start:            startStack,
	}))
}

func startStack(w *world.World) (func(), error) {
	emu = githubemu.New()
	emu.AddToken(forgeToken, githubemu.User{Login: "nudgeflow[bot]", Name: bot.Name, Email: bot.Email})
	bridgeLog, err := os.Create(filepath.Join(w.LogDir, "bridge.log"))
	if err != nil {
		return nil, err
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(bridgeLog), zap.UseDevMode(true)))
	host, port, certDir := w.WebhookServer()
	mgr, err := bridge.NewManager(w.Config(), bridge.ManagerOptions{WebhookHost: host, WebhookPort: port, WebhookCertDir: certDir})
	if err != nil {
		return nil, err
	}
	b, err := bridge.Setup(mgr, bridge.Deps{Temporal: w.TemporalClient, TaskQueue: taskQueue, PRGroup: settings})
	if err != nil {
		return nil, err
	}
	hook := httptest.NewServer(&forgehook.Handler{Secret: forgehook.StaticSecret([]byte(webhookSecret)), Sink: b.PREvents})
	emu.AddWebhook(hook.URL, webhookSecret)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		cancel()
		return nil, context.Canceled
	}
	wk := nfworker.New(w.TemporalClient, nfworker.Deps{
		Kube: w.Kube, Temporal: w.TemporalClient,
		PullRequest: pullrequest.Config{Bot: bot, Transport: http.DefaultTransport},
	}, nfworker.Options{TaskQueue: taskQueue, FailWorkflowOnPanic: true})
	if err := wk.Start(); err != nil {
		cancel()
		return nil, err
	}
	var _ sdkworker.Worker = wk
	return func() {
		wk.Stop()
		cancel()
		<-done
		hook.Close()
		emu.Close()
	}, nil
}
