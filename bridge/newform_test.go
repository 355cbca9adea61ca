package bridge

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// discoveryServer answers the discovery of konflux-ci.dev/v1alpha1 as an API server
// that serves resources there (nil: does not serve the group version: 404).
func discoveryServer(t *testing.T, resources []string) *rest.Config {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/konflux-ci.dev/v1alpha1" || resources == nil {
			http.NotFound(w, r)
			return
		}
		list := metav1.APIResourceList{GroupVersion: "konflux-ci.dev/v1alpha1"}
		for _, name := range resources {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: name, Namespaced: true, Kind: "X", Verbs: []string{"list"}})
		}
		w.Header().Set("Content-Type", "application/json")
		require.NoError(t, json.NewEncoder(w).Encode(list))
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

// The new-form informers run only where their runs can exist: a cluster serving
// the new-model Component (auto), or when the operator says so.
func TestNewFormKeysFollowTheNewModelComponent(t *testing.T) {
	for _, c := range []struct {
		name      string
		mode      string
		resources []string
		want      bool
	}{
		{"auto, the new model served", NewFormKeysAuto, []string{"components", "componentversions"}, true},
		{"auto by default", "", []string{"components"}, true},
		{"auto, the group not served", NewFormKeysAuto, nil, false},
		{"auto, the group served without Components", NewFormKeysAuto, []string{"nudgeconfigs"}, false},
		{"on without the new model", newFormKeysOn, nil, true},
		{"off with the new model", newFormKeysOff, []string{"components"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := cachesNewForm(discoveryServer(t, c.resources), c.mode)
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
	_, err := cachesNewForm(&rest.Config{Host: "http://127.0.0.1:1"}, "sometimes")
	require.ErrorContains(t, err, "want auto, on or off")
}
