package renovate_test

import (
	"context"
	"errors"
	"testing"
)

// writeDirect is the direct writer's side (activities/nudgewrite's
// WriteNudgePR, run as the Nudge workflow's activity): not wired yet.
func writeDirect(ctx context.Context, t *testing.T, d *diffWorld, s *side, n diffNudge) (written, error) {
	return written{}, errors.New("the direct writer (activities/nudgewrite, branch i35-writer) is not wired into the differential test yet")
}
