package receiverapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// recordingManager is what NewInformerSource uses of a manager; it records what
// is added.
type recordingManager struct {
	manager.Manager
	added []manager.Runnable
}

func (m *recordingManager) Add(r manager.Runnable) error { m.added = append(m.added, r); return nil }
func (m *recordingManager) GetConfig() *rest.Config      { return &rest.Config{Host: "https://127.0.0.1:1"} }
func (m *recordingManager) GetHTTPClient() *http.Client {
	return http.DefaultClient
}
func (m *recordingManager) GetScheme() *runtime.Scheme { return kube.NewScheme() }
func (m *recordingManager) GetRESTMapper() meta.RESTMapper {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	return mapper
}

// The bound secrets' informer runs on every replica of the bridge, leader or not:
// the receiver reaches any of them through the webhook Service.
func TestInformerRunsOnEveryReplica(t *testing.T) {
	m := &recordingManager{}
	_, err := NewInformerSource(m, "nudgeflow-system")
	require.NoError(t, err)
	require.Len(t, m.added, 1)
	le, ok := m.added[0].(manager.LeaderElectionRunnable)
	require.True(t, ok, "the manager would start it with the leader only")
	require.False(t, le.NeedLeaderElection())
}
