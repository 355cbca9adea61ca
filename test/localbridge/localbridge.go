// Package localbridge runs nudgeflow's bridge in this process against a local world
// (an envtest API server and a Temporal dev server). The end-to-end tests, `nudgeflow-dev
// dev` and `nudgeflow-dev bench` all start it the same way, here: a manager serving the
// admission webhooks where the API server sends them, the features' Setup, the forge
// webhook receiver registered with the forges, then the manager, waited on until its
// cache is synced and its webhooks serve.
//
// The forge webhook receiver runs as it ships (bridge/receiver, what `nudgeflow
// receiver` runs), beside the bridge in this process: it reads the bound webhook
// secrets from the bridge's receiver API and forwards the events it verified there,
// over the webhook server's TLS, with a ServiceAccount token the API server issued
// for the bridge's audience and the bridge reviews (TokenReview) on the real API
// server. Repository-bound secrets are Secrets in SystemNamespace, as in a cluster.
//
// It is its own package so the test world (world/worldbridge), devenv and bench
// share one way to start the bridge, and localenv (servers only) stays free of it.
package localbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	"github.com/nudgeflow/nudgeflow/bridge/receiver"
	"github.com/nudgeflow/nudgeflow/bridge/receiverapi"
	kubescheme "github.com/nudgeflow/nudgeflow/internal/kube"
)

// DefaultReadyTimeout bounds the wait for the cache sync and the webhooks when
// Options.ReadyTimeout is zero: an empty local cluster syncs in well under a second,
// so a minute only runs out when something is broken.
const DefaultReadyTimeout = time.Minute

// Forge is a forge (an emulator) that delivers its pull request events to webhooks.
type Forge interface {
	AddWebhook(url, secret string)
}

// RepoForge is a forge that also sends one repository's events to a webhook of
// its own (a repository or project hook), signed with that hook's secret.
type RepoForge interface {
	Forge
	// URL is the forge's web URL (its repositories are URL/owner/name).
	URL() string
	// AddRepoWebhook sends the events of repository path (owner/name) to url.
	AddRepoWebhook(path, url, secret string)
}

// ForgeHook configures the forge webhook receiver.
type ForgeHook struct {
	// Secret is the shared webhook secret: GitHub, Gitea and Forgejo sign
	// deliveries with it, GitLab sends it as X-Gitlab-Token; the one receiver
	// checks each.
	Secret string
	// Addr is where the receiver listens; empty is a free loopback port (tests, so
	// that packages run side by side).
	Addr string
	// Forges get the receiver registered as a webhook with the shared secret, and
	// those that are RepoForges a repository webhook per bound repository of theirs.
	Forges []Forge
	// Bound are repository-bound webhook secrets, created as Secrets in
	// SystemNamespace before the receiver starts.
	Bound []BoundSecret
}

// BoundSecret binds Repositories (web URLs) to Namespace under Secret: a
// delivery about one of them verifies under Secret only and reaches Namespace only.
type BoundSecret struct {
	// Name is the Secret's name in SystemNamespace.
	Name         string
	Namespace    string
	Repositories []string
	Secret       string
}

// SystemNamespace is nudgeflow's own namespace in a local world: the receiver's
// ServiceAccount and the bound webhook secrets live there, as in a cluster.
const SystemNamespace = "nudgeflow-system"

// Options configure Start.
type Options struct {
	// Config reaches the API server.
	Config *rest.Config
	// Manager configures the manager: the webhook serving address (where the API
	// server sends admission requests) and the rest.
	Manager bridge.ManagerOptions
	// Deps are bridge.Setup's.
	Deps bridge.Deps
	// NewManager replaces bridge.NewManager, for a process that needs a manager set up
	// otherwise (another cache).
	NewManager func(*rest.Config, bridge.ManagerOptions) (ctrl.Manager, error)
	// Setup replaces bridge.Setup (and Deps), for a process that runs only some of the
	// bridge's features; it may return a nil Bridge when there is no ForgeHook.
	Setup func(ctrl.Manager) (*bridge.Bridge, error)
	// ForgeHook, when set, serves the forge webhook receiver, which feeds the Bridge's
	// pull request events through the bridge's receiver API.
	ForgeHook *ForgeHook
	// WebhookCA is the PEM CA of the webhook server's certificate (envtest's
	// LocalServingCAData): the receiver trusts the bridge by it.
	WebhookCA []byte
	// ReadyTimeout bounds the wait for the cache sync and the webhooks;
	// DefaultReadyTimeout when zero.
	ReadyTimeout time.Duration
}

// Running is a started bridge.
type Running struct {
	Manager ctrl.Manager
	// Bridge is what Setup wired (nil when an Options.Setup returned none).
	Bridge *bridge.Bridge
	// ForgeHookURL is the forge webhook receiver's URL ("" without Options.ForgeHook).
	ForgeHookURL string

	// Receiver is the forge webhook receiver (nil without Options.ForgeHook).
	Receiver *receiver.Receiver

	hook   *hookRun
	cancel context.CancelFunc
	// exited is closed once the manager's Start returned, with its error in mgrErr.
	exited chan struct{}
	mgrErr error

	stopOnce sync.Once
}

// Start starts the bridge and returns once its cache is synced and its admission
// webhooks serve (a build created earlier would not be held: the webhooks fail
// open). ctx bounds only the start; Stop stops the bridge.
func Start(ctx context.Context, opts Options) (*Running, error) {
	newManager := opts.NewManager
	if newManager == nil {
		newManager = bridge.NewManager
	}
	setup := opts.Setup
	if setup == nil {
		setup = func(mgr ctrl.Manager) (*bridge.Bridge, error) { return bridge.Setup(mgr, opts.Deps) }
	}
	mgr, err := newManager(opts.Config, opts.Manager)
	if err != nil {
		return nil, err
	}
	b, err := setup(mgr)
	if err != nil {
		return nil, err
	}
	r := &Running{Manager: mgr, Bridge: b, exited: make(chan struct{})}
	if opts.ForgeHook != nil {
		if err := r.serveForgeHook(ctx, opts, *opts.ForgeHook); err != nil {
			return nil, err
		}
	}
	// Not ctx: the manager runs until Stop, past the start (a test's TestMain, a
	// restart in `nudgeflow-dev bench`).
	mctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		r.mgrErr = mgr.Start(mctx)
		close(r.exited)
	}()
	timeout := opts.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	if err := r.waitReady(ctx, timeout); err != nil {
		// The caller gets no Running to stop: a half-started bridge is stopped here.
		if stopErr := r.Stop(); stopErr != nil {
			err = fmt.Errorf("%w (stopping it: %v)", err, stopErr)
		}
		return nil, err
	}
	return r, nil
}

// hookRun is the receiver's process state in this process.
type hookRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	kube   ctrlclient.Client
}

// serveForgeHook serves the receiver API on the bridge's webhook server and starts
// the receiver before the manager, so that the forges know where to deliver from
// the start: the receiver answers 503 until it has read the bound secrets, which
// waitReady waits for.
func (r *Running) serveForgeHook(ctx context.Context, opts Options, fh ForgeHook) error {
	if r.Bridge == nil {
		return errors.New("the forge webhook receiver needs the Bridge's pull request events: Setup returned none")
	}
	if len(opts.WebhookCA) == 0 {
		return errors.New("the forge webhook receiver needs the webhook server's CA (Options.WebhookCA) to trust the bridge")
	}
	kube, err := ctrlclient.New(opts.Config, ctrlclient.Options{Scheme: kubescheme.NewScheme()})
	if err != nil {
		return err
	}
	if _, err := bridge.SetupReceiverAPI(r.Manager, bridge.ReceiverAPI{SecretsNamespace: SystemNamespace,
		Identity: bridge.ReceiverIdentity(SystemNamespace)}, r.Bridge.PREvents); err != nil {
		return err
	}
	for _, obj := range []ctrlclient.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SystemNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: SystemNamespace, Name: bridge.ReceiverServiceAccount}},
	} {
		if err := kube.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	for _, b := range fh.Bound {
		if err := Bind(ctx, kube, b); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp("", "nudgeflow-receiver-")
	if err != nil {
		return err
	}
	caFile, tokenFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
	if err := os.WriteFile(caFile, opts.WebhookCA, 0o600); err != nil {
		return err
	}
	if err := writeReceiverToken(ctx, opts.Config, tokenFile); err != nil {
		return err
	}
	host := opts.Manager.WebhookHost
	if host == "" {
		host = "127.0.0.1"
	}
	client, err := receiverapi.NewClient("https://"+net.JoinHostPort(host, strconv.Itoa(opts.Manager.WebhookPort)), caFile, tokenFile)
	if err != nil {
		return err
	}
	recv, err := receiver.New(receiver.Options{SharedSecret: forgehook.StaticSecret([]byte(fh.Secret)), Bridge: client,
		Log: slog.New(logr.ToSlogHandler(ctrl.Log.WithName("receiver")))})
	if err != nil {
		return err
	}
	addr := fh.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("forge webhook receiver: listening on %s: %w", addr, err)
	}
	hctx, cancel := context.WithCancel(context.Background())
	r.hook = &hookRun{cancel: cancel, done: make(chan struct{}), kube: kube}
	r.Receiver = recv
	go func() {
		defer close(r.hook.done)
		defer os.RemoveAll(dir)
		go refreshReceiverToken(hctx, opts.Config, tokenFile)
		if err := recv.Serve(hctx, l, nil, nil); err != nil {
			ctrl.Log.WithName("receiver").Error(err, "the forge webhook receiver stopped")
		}
	}()
	r.ForgeHookURL = "http://" + l.Addr().String() + "/"
	for _, f := range fh.Forges {
		f.AddWebhook(r.ForgeHookURL, fh.Secret)
		rf, ok := f.(RepoForge)
		if !ok {
			continue
		}
		for _, b := range fh.Bound {
			for _, repo := range b.Repositories {
				if path, ok := repoPath(rf.URL(), repo); ok {
					rf.AddRepoWebhook(path, r.ForgeHookURL, b.Secret)
				}
			}
		}
	}
	return nil
}

// repoPath is repo's path (owner/name) when repo, a web URL, is one of the
// forge's at forgeURL.
func repoPath(forgeURL, repo string) (string, bool) {
	u, err := url.Parse(forgeURL)
	if err != nil || u.Host == "" {
		return "", false
	}
	return strings.CutPrefix(forgehook.RepoKey(repo), strings.ToLower(u.Host)+"/")
}

// Bind creates (or updates) b's Secret in SystemNamespace: labelled, annotated
// with its namespace and repositories, as an operator binds a repository
// (deploy/README.md). The receiver learns it through the bridge within moments.
func Bind(ctx context.Context, kube ctrlclient.Client, b BoundSecret) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: SystemNamespace, Name: b.Name}}
	_, err := controllerutil.CreateOrUpdate(ctx, kube, s, func() error {
		s.Labels = map[string]string{receiverapi.LabelWebhookSecret: "true"}
		s.Annotations = map[string]string{receiverapi.AnnotationWebhookNamespace: b.Namespace,
			receiverapi.AnnotationWebhookRepositories: strings.Join(b.Repositories, ",")}
		s.Data = map[string][]byte{receiverapi.SecretKey: []byte(b.Secret)}
		return nil
	})
	if err != nil {
		return fmt.Errorf("binding %v to %s: %w", b.Repositories, b.Namespace, err)
	}
	return nil
}

// receiverTokenLifetime is how long the receiver's token lives; it is renewed at
// half its life, as the kubelet renews a projected token at 80 %.
const receiverTokenLifetime = time.Hour

// writeReceiverToken asks the API server for a token of the receiver's
// ServiceAccount for the bridge's audience (TokenRequest, what the kubelet does
// for the projected volume of deploy/base/receiver.yaml) and writes it to file.
func writeReceiverToken(ctx context.Context, cfg *rest.Config, file string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	tr, err := cs.CoreV1().ServiceAccounts(SystemNamespace).CreateToken(ctx, bridge.ReceiverServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{receiverapi.Audience}, ExpirationSeconds: ptr.To(int64(receiverTokenLifetime / time.Second))},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("a token of %s/%s for %s: %w", SystemNamespace, bridge.ReceiverServiceAccount, receiverapi.Audience, err)
	}
	tmp := file + ".new"
	if err := os.WriteFile(tmp, []byte(tr.Status.Token), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// refreshReceiverToken renews the token at half its life until ctx ends (a dev
// stack runs for days).
func refreshReceiverToken(ctx context.Context, cfg *rest.Config, file string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(receiverTokenLifetime / 2):
		}
		if err := writeReceiverToken(ctx, cfg, file); err != nil && ctx.Err() == nil {
			ctrl.Log.WithName("receiver").Error(err, "renewing the receiver's token")
		}
	}
}

// waitReady waits for the cache sync, then the webhook server. A manager that stops
// early (a port taken, a CRD missing) ends the wait with its error at once rather
// than at the deadline.
func (r *Running) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	go func() {
		select {
		case <-r.exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	notReady := func(what string) error {
		select {
		case <-r.exited:
			return fmt.Errorf("the bridge stopped before its %s: %v", what, r.mgrErr)
		default:
			return fmt.Errorf("the bridge's %s not within %s: %w", what, timeout, context.Cause(ctx))
		}
	}
	if !r.Manager.GetCache().WaitForCacheSync(ctx) {
		return notReady("cache synced")
	}
	started := r.Manager.GetWebhookServer().StartedChecker()
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return started(nil) == nil, nil
	}); err != nil {
		return notReady("admission webhooks served")
	}
	if r.Receiver != nil {
		if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
			return r.Receiver.Ready(), nil
		}); err != nil {
			return notReady("forge webhook receiver's bound secrets read")
		}
	}
	return nil
}

// Stop stops the forge webhook receiver, then the manager, and returns the manager's
// error. Later calls do nothing and return the same error.
func (r *Running) Stop() error {
	r.stopOnce.Do(func() {
		if r.hook != nil {
			r.hook.cancel()
			<-r.hook.done
		}
		r.cancel()
		<-r.exited
	})
	return r.mgrErr
}
