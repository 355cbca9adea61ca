package pullrequest_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	pr "github.com/nudgeflow/nudgeflow/activities/pullrequest"
)

// Issue 9, item 10: forge errors end in a defined state.

// A repository whose plan has no draft PRs gets a normal PR that is still held: the
// skip marker in the commits and the description keeps CI from running until the
// one release push.
func TestDraftsUnsupportedOpensAHeldNormalPR(t *testing.T) {
	f := setup(t)
	f.emu.DisallowDrafts("org", "bundle")
	o := f.sync(f.request(pr.ModeHold, "operator"))
	p, _ := f.emu.PR("org", "bundle", o.PR.Number)
	if p.Draft || p.State != "open" {
		t.Fatalf("want an open non-draft PR, got draft=%v state=%s", p.Draft, p.State)
	}
	if o.MarkedReadyByHuman {
		t.Fatal("a normal PR opened for want of drafts is not a person's release")
	}
	o = f.sync(f.request(pr.ModeHold, "operator", "operand-a"))
	if o.MarkedReadyByHuman || f.emu.CIBuilds("org", "bundle") != 0 {
		t.Fatalf("held pushes trigger no CI: ci=%d markedReady=%v", f.emu.CIBuilds("org", "bundle"), o.MarkedReadyByHuman)
	}
	f.sync(f.request(pr.ModeRelease, "operator", "operand-a"))
	if got := f.emu.CIBuilds("org", "bundle"); got != 1 {
		t.Fatalf("the release triggers exactly one CI build, got %d", got)
	}
}

func retryable(t *testing.T, err error, wantType string) *temporal.ApplicationError {
	t.Helper()
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		t.Fatalf("want an ApplicationError, got %v", err)
	}
	if ae.NonRetryable() || ae.Type() != wantType {
		t.Fatalf("want a retryable %s, got type %s nonRetryable=%v: %v", wantType, ae.Type(), ae.NonRetryable(), err)
	}
	return ae
}

// GraphQL answers its own rate limit with HTTP 200 and an error of type
// RATE_LIMITED: retried after a delay, never a failed group.
func TestGraphQLRateLimitIsRetried(t *testing.T) {
	f := setup(t)
	f.sync(f.request(pr.ModeHold, "operator"))
	f.emu.RateLimitGraphQL(1)
	_, err := f.trySync(f.request(pr.ModeRelease, "operator"))
	ae := retryable(t, err, "GitHubRateLimit")
	if ae.NextRetryDelay() < time.Second {
		t.Fatalf("a rate limit waits before the retry, got %s", ae.NextRetryDelay())
	}
	f.sync(f.request(pr.ModeRelease, "operator"))
	if got := f.emu.CIBuilds("org", "bundle"); got != 1 {
		t.Fatalf("the retried release triggers exactly one CI build, got %d", got)
	}
}

// A rotated token (401) is retried: the workflow bounds how long, with the reason
// in the group's status; the message says what to check and holds no token.
func TestUnauthorizedIsRetriedWithTheReason(t *testing.T) {
	f := setup(t)
	f.emu.RevokeToken(token)
	_, err := f.trySync(f.request(pr.ModeHold, "operator"))
	ae := retryable(t, err, "Unauthorized")
	if msg := ae.Error(); !contains(msg, "credentials") || contains(msg, token) {
		t.Fatalf("the message names the credentials and never the token: %s", msg)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
