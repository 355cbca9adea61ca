package nudgeconfigs

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
)

// ownVersions are the versions of nudgeconfigs.konflux-ci.dev that nudgeflow ships
// (deploy/crds): every version the API server serves of that CRD when nudgeflow's
// CRD is the one installed.
var ownVersions = []string{Own.Version}

// ErrOwnGroupTaken: the API server serves nudgeconfigs.konflux-ci.dev in a version
// nudgeflow does not ship, so the CRD is not nudgeflow's. ADR 68 moves Konflux's
// appstudio.redhat.com CRDs to konflux-ci.dev with kind and version unchanged:
// integration-service's NudgeConfig becomes konflux-ci.dev/v1beta2 there, the name
// of nudgeflow's own CRD. docs/konflux.md ("ADR 68: whose nudgeconfigs.konflux-ci.dev")
// has the decision and the migration.
type ErrOwnGroupTaken struct{ Served []string }

func (e *ErrOwnGroupTaken) Error() string {
	return fmt.Sprintf("the API server serves nudgeconfigs.%s in versions %s, and nudgeflow ships only %s: "+
		"the CRD is another owner's (Konflux's NudgeConfig moved to %s, ADR 68); nudgeflow does not read or "+
		"admit a schema it does not own. Move nudgeflow's own NudgeConfigs to their own group first (docs/konflux.md, "+
		"\"ADR 68: whose nudgeconfigs.konflux-ci.dev\")",
		Own.Group, strings.Join(e.Served, ","), strings.Join(ownVersions, ","), Own.Group)
}

// CheckOwnGroup returns *ErrOwnGroupTaken when nudgeconfigs.konflux-ci.dev is
// served in a version nudgeflow does not ship (read from discovery: no RBAC on
// CustomResourceDefinitions needed), and nil when it is nudgeflow's or not served.
// Two owners cannot share a CRD: one apply replaces the other's versions, and the
// API server refuses an update that drops a stored version, so whichever installs
// second fails or, worse, succeeds before any object is stored.
func CheckOwnGroup(mapper meta.RESTMapper) error {
	mappings, err := mapper.RESTMappings(Own.GroupKind())
	if meta.IsNoMatchError(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("asking the API server which versions of %s it serves: %w", Own.GroupKind(), err)
	}
	var served []string
	foreign := false
	for _, m := range mappings {
		v := m.GroupVersionKind.Version
		served = append(served, v)
		foreign = foreign || !slices.Contains(ownVersions, v)
	}
	if !foreign {
		return nil
	}
	slices.Sort(served)
	return &ErrOwnGroupTaken{Served: served}
}
