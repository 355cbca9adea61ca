package changegroup

import (
	"fmt"
	"testing"
	"time"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
)

// The dedupe set carried through continue-as-new stays bounded: beyond
// maxSeenBuilds only the current, pushed and handed-back digests are kept, and an
// old build redelivered after pruning still changes nothing.
func TestSeenIsBoundedAcrossContinueAsNew(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	s := &State{Phase: appstudiov1alpha1.PhaseWaiting, Seen: map[string]bool{},
		Components: []Component{{Name: "op", State: appstudiov1alpha1.ComponentWaiting}}}
	build := func(n int) changegroupapi.ComponentBuilt {
		return changegroupapi.ComponentBuilt{Component: "op", Build: imagebuild.Build{Digest: fmt.Sprintf("sha256:%064x", n), PullSpec: fmt.Sprintf("quay.io/o/op@sha256:%064x", n), BuiltAt: t0.Add(time.Duration(n) * time.Minute)}}
	}
	for n := 1; n <= maxSeenBuilds+100; n++ {
		if changed, why := s.applyBuild(t0, build(n), true); !changed {
			t.Fatalf("build %d not applied: %s", n, why)
		}
	}
	s.Components[0].Pushed = build(maxSeenBuilds).Digest
	s.pruneSeen()
	if len(s.Seen) != 2 || !s.Seen["op@"+build(maxSeenBuilds+100).Digest] || !s.Seen["op@"+build(maxSeenBuilds).Digest] {
		t.Fatalf("want the current and the pushed digest kept, got %v", s.Seen)
	}
	if changed, why := s.applyBuild(t0, build(7), true); changed || why != "older than "+build(maxSeenBuilds+100).Digest {
		t.Fatalf("a forgotten old build changes nothing, got changed=%v (%s)", changed, why)
	}
	if s.Components[0].New != build(maxSeenBuilds+100).Digest || len(s.HandBack) != 0 {
		t.Fatalf("state changed: %+v", s.Components[0])
	}
}
