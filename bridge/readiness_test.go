package bridge

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// listingCache is a cache whose informers sync when release is closed; a kind in
// unserved is not served by the cluster.
type listingCache struct {
	cache.Cache
	release  chan struct{}
	unserved ctrlclient.Object
	asked    []ctrlclient.Object
}

func (c *listingCache) GetInformer(_ context.Context, obj ctrlclient.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	if obj == c.unserved {
		return nil, &meta.NoKindMatchError{GroupKind: schema.GroupKind{Kind: "NudgeConfig"}}
	}
	c.asked = append(c.asked, obj)
	return nil, nil
}

func (c *listingCache) WaitForCacheSync(ctx context.Context) bool {
	select {
	case <-c.release:
		return true
	case <-ctx.Done():
		return false
	}
}

// A replica is not ready while the informers its webhooks read list; it is once
// they and the receiver API's cache synced. A kind the cluster does not serve is
// not waited for.
func TestReadyOnlyOnceTheWebhooksCachesSynced(t *testing.T) {
	unserved := &konfluxv1alpha1.NudgeConfig{}
	kinds := []ctrlclient.Object{&appstudiov1alpha1.ChangeGroup{}, unserved}
	c := &listingCache{release: make(chan struct{}), unserved: unserved}
	receiverSynced := make(chan struct{})
	w := &cacheWarmer{cache: c, kinds: kinds, timeout: time.Minute, more: []func() bool{func() bool {
		select {
		case <-receiverSynced:
			return true
		default:
			return false
		}
	}}}
	done := make(chan error, 1)
	go func() { done <- w.Start(context.Background()) }()
	require.ErrorIs(t, w.check(nil), errCachesNotSynced, "not ready while the caches list")
	close(c.release)
	require.Never(t, func() bool { return w.check(nil) == nil }, 300*time.Millisecond, 10*time.Millisecond,
		"not ready while the receiver API's cache lists")
	close(receiverSynced)
	require.NoError(t, <-done)
	require.NoError(t, w.check(nil))
	require.Equal(t, []ctrlclient.Object{kinds[0]}, c.asked, "the served kind's informer is made on every replica")
}

// Caches that do not sync within the timeout stop the replica (the pod restarts),
// as a controller's do.
func TestCachesNotSyncedInTimeStopTheReplica(t *testing.T) {
	c := &listingCache{release: make(chan struct{})}
	w := &cacheWarmer{cache: c, kinds: []ctrlclient.Object{&appstudiov1alpha1.ChangeGroup{}}, timeout: 50 * time.Millisecond}
	err := w.Start(context.Background())
	require.Error(t, err)
	require.Contains(t, err.Error(), "--cache-sync-timeout")
	require.ErrorIs(t, w.check(nil), errCachesNotSynced)

	// Stopping (SIGTERM) before the caches synced is no error.
	stop, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, (&cacheWarmer{cache: c, timeout: time.Minute}).Start(stop))
}

// Every kind the hooks read is one the manager's scheme knows.
func TestWebhookReadKindsAreInTheScheme(t *testing.T) {
	s := kube.NewScheme()
	for _, obj := range webhookReadKinds() {
		_, _, err := s.ObjectKinds(obj)
		require.NoError(t, err, "%T", obj)
	}
}
