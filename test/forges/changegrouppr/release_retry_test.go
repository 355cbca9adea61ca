package changegrouppr_test

import (
	"testing"
	"time"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
)

// A rate limit or a transient GraphQL error at release is retried,
// never a failed group (which would hand every build back: N nudges, not one PR).
// GitHub documents a secondary rate limit as 403 or 429 with a message saying so,
// Retry-After optional (then wait at least a minute); GraphQL errors carry a type
// (RATE_LIMITED, NOT_FOUND, ...), and an untyped "Something went wrong" is its side.
func TestRateLimitAtReleaseIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fault    githubemu.GraphQLFault
		wantType string
		minDelay time.Duration
	}{
		{"secondary rate limit without Retry-After", githubemu.GraphQLSecondaryLimit, "GitHubRateLimit", time.Minute},
		{"untyped GraphQL error in a 200", githubemu.GraphQLTransient, "GitHubGraphQLTransient", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t)
			f.sync(f.request(changegroupprapi.ModeHold, "operator"))
			f.emu.FailGraphQL(1, tc.fault)
			_, err := f.trySync(f.request(changegroupprapi.ModeRelease, "operator"))
			ae := retryable(t, err, tc.wantType)
			if ae.NextRetryDelay() < tc.minDelay {
				t.Fatalf("want a wait of at least %s, got %s", tc.minDelay, ae.NextRetryDelay())
			}
			f.sync(f.request(changegroupprapi.ModeRelease, "operator"))
			p, _ := f.emu.PR("org", "bundle", 1)
			if got := f.emu.CIBuilds("org", "bundle"); got != 1 || p.Draft {
				t.Fatalf("the retried release lifts the draft and triggers exactly one CI build, got %d (draft %v)", got, p.Draft)
			}
		})
	}
}
