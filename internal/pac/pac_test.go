package pac

import (
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	open := ACL{}
	restricted := ACL{Enforced: true, Trusted: []string{"maintainer"}}
	for _, tc := range []struct {
		name string
		ev   Event
		acl  ACL
		want Outcome
	}{
		{"not an event PaC builds on", Event{Builds: false, Sender: "maintainer"}, open, nothing},
		{"skip marker", Event{Builds: true, HeadMessage: "bump [skip ci]", Sender: "maintainer"}, open, skipped},
		{"skip marker beats the ACL", Event{Builds: true, HeadMessage: "x [tkn skip]", Sender: "stranger"}, restricted, skipped},
		{"no restriction trusts everyone", Event{Builds: true, HeadMessage: "bump", Sender: "stranger"}, open, Run},
		{"trusted author", Event{Builds: true, HeadMessage: "bump", Sender: "maintainer"}, restricted, Run},
		{"untrusted author waits", Event{Builds: true, HeadMessage: "bump", Sender: "nudgeflow"}, restricted, AwaitApproval},
		{"untrusted bot is ignored", Event{Builds: true, HeadMessage: "bump", Sender: "nudgeflow[bot]", SenderIsBot: true}, restricted, ignoredBot},
		{"trusted bot runs", Event{Builds: true, HeadMessage: "bump", Sender: "renovate[bot]", SenderIsBot: true},
			ACL{Enforced: true, Trusted: []string{"renovate[bot]"}}, Run},
	} {
		if got := Decide(tc.ev, tc.acl); got != tc.want {
			t.Errorf("%s: Decide = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestHasSkipMarker(t *testing.T) {
	for msg, want := range map[string]bool{
		"update [skip ci]":        true,
		"[ci skip] x":             true,
		"x [skip tkn]":            true,
		"[tkn skip]":              true,
		"[SKIP CI]":               false,
		"skip ci":                 false,
		"[skip  ci]":              false,
		"title\n\nbody [skip ci]": true,
		"":                        false,
	} {
		if got := HasSkipMarker(msg); got != want {
			t.Errorf("HasSkipMarker(%q) = %v, want %v", msg, got, want)
		}
	}
}

func TestProviderEventRules(t *testing.T) {
	for action, want := range map[string]bool{"opened": true, "synchronize": true, "synchronized": true, "reopened": true,
		"ready_for_review": true, "edited": false, "closed": false, "converted_to_draft": false} {
		if GitHubBuilds(action) != want {
			t.Errorf("GitHubBuilds(%q) = %v, want %v", action, !want, want)
		}
	}
	for action, want := range map[string]bool{"opened": true, "synchronize": true, "synchronized": true, "reopened": true,
		"ready_for_review": false, "edited": false, "label_updated": false, "closed": false} {
		if GiteaBuilds(action) != want {
			t.Errorf("GiteaBuilds(%q) = %v, want %v", action, !want, want)
		}
	}
	for _, tc := range []struct {
		action, oldrev string
		want           bool
	}{{"open", "", true}, {"reopen", "", true}, {"update", "abc", true}, {"update", "", false}, {"close", "", false}, {"merge", "", false}} {
		if GitLabBuilds(tc.action, tc.oldrev) != tc.want {
			t.Errorf("GitLabBuilds(%q, %q) = %v, want %v", tc.action, tc.oldrev, !tc.want, tc.want)
		}
	}
}

// IsOkToTest follows PaC's regex: the command alone on a line (a SHA may follow),
// never inside a sentence.
func TestIsOkToTest(t *testing.T) {
	for body, want := range map[string]bool{
		"/ok-to-test":                         true,
		"/ok-to-test\n":                       true,
		"looks fine\n/ok-to-test\nthanks":     true,
		"  /ok-to-test  ":                     true,
		"/ok-to-test 0123abcd":                true,
		"/ok-to-test please":                  false,
		"comment `/ok-to-test` on this PR":    false,
		"waiting for an /ok-to-test":          false,
		"/ok-to-tests":                        false,
		"ok-to-test":                          false,
		PendingApprovalSummary + "<br>" + "x": false,
	} {
		if got := IsOkToTest(body); got != want {
			t.Errorf("IsOkToTest(%q) = %v, want %v", body, got, want)
		}
	}
}

func TestOkToTestRuns(t *testing.T) {
	acl := ACL{Enforced: true, Trusted: []string{"maintainer"}}
	if !OkToTestRuns("/ok-to-test", acl, "maintainer", false) {
		t.Error("a trusted /ok-to-test on a SHA without a run must run")
	}
	if OkToTestRuns("/ok-to-test", acl, "stranger", false) {
		t.Error("an untrusted /ok-to-test must not run")
	}
	if OkToTestRuns("/ok-to-test", acl, "maintainer", true) {
		t.Error("a SHA that already ran must not run again")
	}
	if OkToTestRuns("lgtm", acl, "maintainer", false) {
		t.Error("a comment without the command must not run")
	}
}

func FuzzHasSkipMarker(f *testing.F) {
	f.Add("x [skip ci]")
	f.Fuzz(func(t *testing.T, msg string) {
		got := HasSkipMarker(msg)
		want := false
		for _, m := range []string{"[skip ci]", "[ci skip]", "[skip tkn]", "[tkn skip]"} {
			want = want || strings.Contains(msg, m)
		}
		if got != want {
			t.Fatalf("HasSkipMarker(%q) = %v, want %v", msg, got, want)
		}
	})
}
