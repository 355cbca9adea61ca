package changegroup

import (
	"fmt"
	"testing"
	"time"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
)

// A build of unknown start (the bridge delivered it from a held run whose build
// run was pruned, with no start on the run: bridge/changegroupcontroller buildOf) never
// replaces a build of known start the group holds; a build of known start
// replaces one of unknown start.
func TestBuildOfUnknownStartNeverReplacesAKnownOne(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	build := func(n int, at time.Time) ComponentBuilt {
		return ComponentBuilt{Component: "op", Build: imagebuild.Build{Digest: fmt.Sprintf("sha256:%064x", n), PullSpec: fmt.Sprintf("quay.io/o/op@sha256:%064x", n), BuiltAt: at}}
	}
	s := &State{Phase: appstudiov1alpha1.PhaseWaiting, Seen: map[string]bool{},
		Components: []Component{{Name: "op", State: appstudiov1alpha1.ComponentWaiting}}}
	if changed, why := s.applyBuild(t0, build(2, t0), true); !changed {
		t.Fatalf("known build not applied: %s", why)
	}
	if changed, why := s.applyBuild(t0, build(1, time.Time{}), true); changed || why != "older than "+build(2, t0).Digest {
		t.Fatalf("a build of unknown start replaced a known one: changed=%v (%s)", changed, why)
	}
	s = &State{Phase: appstudiov1alpha1.PhaseWaiting, Seen: map[string]bool{},
		Components: []Component{{Name: "op", State: appstudiov1alpha1.ComponentWaiting}}}
	s.applyBuild(t0, build(1, time.Time{}), true)
	if changed, why := s.applyBuild(t0, build(2, t0), true); !changed || s.Components[0].New != build(2, t0).Digest {
		t.Fatalf("a build of known start did not replace one of unknown start: %s", why)
	}
}
