package nudgeconfigs

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestCheckOwnGroup: nudgeflow's CRD (v1alpha1 only) or none is fine; a
// nudgeconfigs.konflux-ci.dev that also or only serves integration-service's
// v1beta2 (ADR 68's move) is another owner's, and the bridge must not run on it.
func TestCheckOwnGroup(t *testing.T) {
	mapper := func(versions ...string) meta.RESTMapper {
		var gvs []schema.GroupVersion
		for _, v := range versions {
			gvs = append(gvs, schema.GroupVersion{Group: Own.Group, Version: v})
		}
		m := meta.NewDefaultRESTMapper(gvs)
		for _, v := range versions {
			m.Add(schema.GroupVersionKind{Group: Own.Group, Version: v, Kind: Own.Kind}, meta.RESTScopeNamespace)
		}
		return m
	}
	require.NoError(t, CheckOwnGroup(mapper()), "not served")
	require.NoError(t, CheckOwnGroup(mapper("v1alpha1")), "nudgeflow's")
	for _, versions := range [][]string{{"v1beta2"}, {"v1alpha1", "v1beta2"}} {
		err := CheckOwnGroup(mapper(versions...))
		var taken *ErrOwnGroupTaken
		require.True(t, errors.As(err, &taken), "%v: %v", versions, err)
		require.Contains(t, err.Error(), "v1beta2")
		require.Contains(t, err.Error(), "ADR 68")
	}
}
