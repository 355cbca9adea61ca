package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	newmodel "github.com/nudgeflow/nudgeflow/api/mirror/konflux/v1alpha1"
)

// Readiness: a bridge replica is Ready only once the informer caches its
// admission webhooks read have synced. The webhook server starts before the caches
// (controller-runtime serves conversion webhooks first), and the hooks read
// ChangeGroups, Components, NudgeConfigs and builds from the cache: a hook answered
// by a replica still listing waits on the list past the API server's 5 s call
// timeout, and failurePolicy Ignore lets the nudge through un-intercepted. At
// 100,000 PipelineRuns the first list takes minutes (docs/performance.md), so a
// replica Ready at "listener started" took the rollout's traffic, and the old warm
// replicas were stopped, while every hook it answered failed open.
//
// The caches' informers for the controllers' kinds exist on the leader only (a
// controller's watch creates them when it starts, after the election); a
// non-leader's would be created by the first admission request that reads them.
// cacheWarmer creates the hooks' informers on every replica and waits for them.

// webhookReadKinds are the kinds the admission webhooks read from the informer
// cache: the ChangeGroup validator and the nudge interceptor (changegroup.Setup:
// ChangeGroups, Components of both models, NudgeConfigs of both kinds, the build a
// nudge names). The build-routing and NudgeConfig webhooks read live.
func webhookReadKinds() []ctrlclient.Object {
	return []ctrlclient.Object{
		&appstudiov1alpha1.ChangeGroup{},
		&mirrorv1alpha1.Component{},
		&newmodel.Component{},
		&konfluxv1alpha1.NudgeConfig{},
		&mirrorv1beta2.NudgeConfig{},
		&tektonv1.PipelineRun{},
	}
}

// DefaultCacheSyncTimeout bounds how long a controller, and the readiness of a
// replica, wait for the informers' first lists; a replica whose caches have not
// synced by then exits and its pod restarts. controller-runtime's default, 2
// minutes, is shorter than the first list of 75,000 builds and nudges among
// 100,000 PipelineRuns: in the bridge-scale measure (API server reading from
// etcd) the bridge exited after 2 minutes, still listing, and a pod would restart
// and list again forever. The sync took 548 s there (docs/performance.md): 10
// minutes leaves little margin on a slower API server, hence --cache-sync-timeout.
const DefaultCacheSyncTimeout = 10 * time.Minute

// cacheWarmer is the runnable behind CachesSynced.
type cacheWarmer struct {
	cache   cache.Cache
	kinds   []ctrlclient.Object
	timeout time.Duration
	// more are other caches' sync checks (the receiver API's bound secrets).
	more   []func() bool
	synced atomic.Bool
}

// NeedLeaderElection: every replica serves the webhooks, so every replica warms.
func (*cacheWarmer) NeedLeaderElection() bool { return false }

// Start creates the informers of w.kinds (a kind the cluster does not serve is
// skipped: the hooks read it as absent) and waits for them and w.more to sync,
// at most w.timeout; past it the manager stops and the process exits.
func (w *cacheWarmer) Start(stop context.Context) error {
	log := ctrl.Log.WithName("bridge").WithName("readiness")
	started := time.Now()
	ctx, cancel := context.WithTimeout(stop, w.timeout)
	defer cancel()
	// All informers list at once; WaitForCacheSync then waits for every one.
	for _, obj := range w.kinds {
		if _, err := w.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return fmt.Errorf("starting the informer of %T for the admission webhooks: %w", obj, err)
		}
	}
	if !w.cache.WaitForCacheSync(ctx) {
		if stop.Err() != nil {
			return nil // stopping before the caches synced
		}
		return fmt.Errorf("the bridge's caches did not sync within %s (--cache-sync-timeout)", w.timeout)
	}
	for _, synced := range w.more {
		for !synced() {
			select {
			case <-ctx.Done():
				if stop.Err() != nil {
					return nil
				}
				return fmt.Errorf("the receiver API's cache did not sync within %s (--cache-sync-timeout)", w.timeout)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	w.synced.Store(true)
	log.Info("the admission webhooks' caches synced: ready", "after", time.Since(started).Round(time.Millisecond).String())
	return nil
}

// errCachesNotSynced is the readiness answer until the caches synced.
var errCachesNotSynced = errors.New("the informer caches the admission webhooks read have not synced yet")

// check is the readiness checker.
func (w *cacheWarmer) check(*http.Request) error {
	if !w.synced.Load() {
		return errCachesNotSynced
	}
	return nil
}

// addCacheWarmer registers the warmer with mgr (Setup).
func addCacheWarmer(mgr ctrl.Manager, more ...func() bool) (*cacheWarmer, error) {
	timeout := mgr.GetControllerOptions().CacheSyncTimeout
	if timeout <= 0 {
		timeout = DefaultCacheSyncTimeout
	}
	w := &cacheWarmer{cache: mgr.GetCache(), kinds: webhookReadKinds(), timeout: timeout, more: more}
	if err := mgr.Add(w); err != nil {
		return nil, fmt.Errorf("adding the readiness cache warmer: %w", err)
	}
	return w, nil
}

var _ healthz.Checker = (&cacheWarmer{}).check
