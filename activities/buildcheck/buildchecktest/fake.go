// Package buildchecktest stands in for the build verification in workflow unit
// tests: every digest is built but those the test says were not.
package buildchecktest

import (
	"context"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
)

// Fake answers VerifyBuild like the real activity would for a cluster that built
// every digest but NotBuilt's, and records what it was asked.
type Fake struct {
	mu sync.Mutex
	// NotBuilt are the digests the cluster has no trace of (never built, or built
	// and pruned with nothing else naming them).
	NotBuilt map[string]bool
	// Failures fails that many verifications (the API server is unreachable),
	// non-retryably: the activity's own retries run on the wall clock in the test
	// suite; what a test looks at is the workflow once they are spent.
	Failures int
	asked    []buildcheck.Request
}

// New returns a Fake for a cluster that built everything.
func New() *Fake { return &Fake{NotBuilt: map[string]bool{}} }

// Register adds the fake under the activity's name (on every test environment of
// one test, so counts span a chain of runs).
func (f *Fake) Register(r sdkworker.ActivityRegistry) *Fake {
	r.RegisterActivityWithOptions(f.VerifyBuild, activity.RegisterOptions{Name: buildcheck.ActivityName})
	return f
}

// Fail fails the next n verifications.
func (f *Fake) Fail(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Failures = n
}

// VerifyBuild is the fake activity.
func (f *Fake) VerifyBuild(_ context.Context, req buildcheck.Request) (buildcheck.Verdict, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, req)
	switch {
	case f.Failures > 0:
		f.Failures--
		return buildcheck.Verdict{}, temporal.NewNonRetryableApplicationError("the API server is unreachable", "Unavailable", nil)
	case req.ClaimedNamespace != "" && req.ClaimedNamespace != req.Namespace:
		return buildcheck.Verdict{Reason: "the build names namespace " + req.ClaimedNamespace}, nil
	case f.NotBuilt[req.Digest]:
		return buildcheck.Verdict{Reason: "no build of " + req.Component + " produced " + req.Digest}, nil
	}
	return buildcheck.Verdict{Verified: true, Source: buildcheck.SourceBuildRun, Evidence: req.BuildPipelineRun}, nil
}

// Refuse makes digests unknown to the cluster from now on.
func (f *Fake) Refuse(digests ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range digests {
		f.NotBuilt[d] = true
	}
}

// Asked are the verifications asked for, in order.
func (f *Fake) Asked() []buildcheck.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]buildcheck.Request(nil), f.asked...)
}

// Count is how often digest was verified.
func (f *Fake) Count(digest string) int {
	n := 0
	for _, r := range f.Asked() {
		if r.Digest == digest {
			n++
		}
	}
	return n
}

// Left is how many failures are still to come.
func (f *Fake) Left() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Failures
}
