package nudgewrite

import (
	"encoding/base64"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/contracts/nudgewriteapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
)

const gitAuthor = "nudgeflow <123456+nudgeflow[bot]@users.noreply.127.0.0.1>"

func input(o renovate.Options) renovate.ConfigInput {
	return renovate.ConfigInput{Platform: "forgejo", GitAuthor: gitAuthor, Repository: "diff/dockerfile", BaseBranch: "main",
		Nudging: "operand", Nudged: "dockerfile", BuiltRepo: "127.0.0.1:45355/diff/dockerfile", BuiltTag: "v1",
		RepoAtSHA: "https://git.example.com/tenant/operand?rev=" + strings.Repeat("ab", 20), Options: o,
		BuiltAt: time.Date(2026, 11, 28, 9, 1, 0, 0, time.UTC), Run: "nudge-direct-0123456789ab"}
}

// renovateBody is the body the real Renovate 39.264.0 wrote for this nudge
// (/work/wt/i35-renovate-shape.md, case dockerfile), its debug record aside.
const renovateBody = "Image created from 'https://git.example.com/tenant/operand?rev=abababababababababababababababababababab'\n\n" +
	"This PR contains the following updates:\n\n| Package | Update | Change |\n|---|---|---|\n" +
	"| 127.0.0.1:45355/diff/dockerfile | digest | `1018c47` -> `8b470ee` |\n\n---\n\n### Configuration\n\n" +
	"📅 **Schedule**: Branch creation - At any time (no schedule defined), Automerge - At any time (no schedule defined).\n\n" +
	"🚦 **Automerge**: Disabled by config. Please merge this manually once you are satisfied.\n\n" +
	"♻ **Rebasing**: Whenever PR is behind base branch, or you tick the rebase/retry checkbox.\n\n" +
	"👻 **Immortal**: This PR will be recreated if closed unmerged. Get [config help](https://github.com/renovatebot/renovate/discussions) if that's undesired.\n\n" +
	"---\n\n - [ ] <!-- rebase-check -->If you want to rebase/retry this PR, check this box\n\n---\n\n" +
	"To execute skipped test pipelines write comment `/ok-to-test`\nThis is Konflux nudging PR, not Mintmaker.\n"

func TestShapeIsRenovates(t *testing.T) {
	from, to := "sha256:1018c47"+strings.Repeat("0", 57), "sha256:8b470ee"+strings.Repeat("1", 57)
	s := shapeOf(renovate.GenerateConfig(input(renovate.Options{})), "operand", "dockerfile", false, to)
	require.Equal(t, "konflux/component-updates/dockerfile-component-update-operand", s.Branch)
	require.Equal(t, "Update operand to 8b470ee", s.Title)
	require.Equal(t, "Update operand to 8b470ee\n\nImage created from 'https://git.example.com/tenant/operand?rev="+strings.Repeat("ab", 20)+"'\n\n"+
		"Signed-off-by: "+gitAuthor+"\nNudgeflow-Built-At: 2026-11-28T09:01:00.000000000Z\nNudgeflow-Run: nudge-direct-0123456789ab", s.Message)
	require.Equal(t, []string{"konflux-nudge"}, s.Labels)

	body := bodyOf(s, "127.0.0.1:45355/diff/dockerfile", from, to, "main", "")
	require.Equal(t, renovateBody, debugRE.ReplaceAllString(body, "\n"))
	d, ok := readDebug(body)
	require.True(t, ok)
	require.Equal(t, debugData{CreatedInVer: writerVersion, UpdatedInVer: writerVersion, TargetBranch: "main", Labels: []string{"konflux-nudge"}}, d)
	require.True(t, strings.HasSuffix(body, "-->\n"))
	raw := debugRE.FindStringSubmatch(body)[1]
	dec, _ := base64.StdEncoding.DecodeString(raw)
	require.Equal(t, `{"createdInVer":"nudgeflow-direct","updatedInVer":"nudgeflow-direct","targetBranch":"main","labels":["konflux-nudge"]}`, string(dec), "Renovate's key order")

	// A later write keeps the version that created the PR (Renovate's createdInVer).
	prev := strings.Replace(body, raw, base64.StdEncoding.EncodeToString([]byte(`{"createdInVer":"39.264.0","updatedInVer":"39.264.0","targetBranch":"main","labels":["konflux-nudge"]}`)), 1)
	d, _ = readDebug(bodyOf(s, "127.0.0.1:45355/diff/dockerfile", from, to, "main", prev))
	require.Equal(t, "39.264.0", d.CreatedInVer)
}

func TestTitleTakesPrefixSuffixAndLabels(t *testing.T) {
	cfg := renovate.GenerateConfig(input(renovate.ParseOptions(map[string]string{
		"commitMessagePrefix": "chore(deps):", "commitMessageSuffix": " [nudge] ", "labels": "a, konflux-nudge, b, a", "automerge": "true"})))
	s := shapeOf(cfg, "operand", "dockerfile", true, "sha256:8b470ee"+strings.Repeat("1", 57))
	require.Equal(t, "chore(deps): Update operand to 8b470ee [nudge]", s.Title)
	require.Equal(t, "konflux/component-updates/component-update-operand", s.Branch, "simple branch")
	require.Equal(t, []string{"konflux-nudge", "a", "b"}, s.Labels)
	require.True(t, s.Automerge, "platformAutomerge is true unless the ConfigMap says otherwise")
	require.Contains(t, bodyOf(s, "r", "", "sha256:1", "main", ""), "**Automerge**: Enabled.")
}

func TestPreviousDigest(t *testing.T) {
	old, other, to := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64), "sha256:"+strings.Repeat("c", 64)
	before := map[string]string{
		"b.yaml":     "image: quay.io/org/op:v1@" + old + "\n",
		"a/app.yaml": "x: quay.io/org/op@" + to + "\ny: registry.example.com/rel/op@" + other + "\n",
	}
	require.Equal(t, other, previousDigest(before, []string{"quay.io/org/op", "registry.example.com/rel/op"}, to), "first path, a digest that changes")
	require.Empty(t, previousDigest(nil, []string{"quay.io/org/op"}, to))
}

func TestRunNameIsAName(t *testing.T) {
	// The branch check reads the Nudgeflow-Run trailer only when it is a
	// Kubernetes name (branchcheck.go).
	require.Regexp(t, regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`), runName("tenant/nudge:abc/consumer"))
	require.Equal(t, runName("a"), runName("a"))
	require.NotEqual(t, runName("a"), runName("b"))
}

func TestDecide(t *testing.T) {
	s := shape{Branch: "konflux/component-updates/c-component-update-o", Title: "Update o to 1234567", Labels: []string{"konflux-nudge", "team"}}
	ours := forge.Commit{SHA: "1111111aaaa", Message: "Update o\n\nSigned-off-by: x\nNudgeflow-Built-At: 2026-11-28T09:01:00.000000000Z\nNudgeflow-Run: r1"}
	person := forge.Commit{SHA: "2222222bbbb", Author: forge.Signature{Email: "dev@example.com"}, Message: "mine"}
	changes := map[string][]byte{"Dockerfile": []byte("x")}
	body := "the body"
	debug := bodyOf(shape{Labels: []string{"konflux-nudge"}}, "r", "", "", "main", "")
	for _, c := range []struct {
		name string
		f    facts
		want plan
	}{
		{"a first write opens", facts{changes: changes, found: true, builtAt: "2026-11-28T09:00:00.000000000Z"},
			plan{push: true, open: true}},
		{"an older build than the branch's is superseded", facts{changes: changes, branch: true, head: ours, headOurs: true, builtAt: "2026-11-28T09:00:00.000000000Z"},
			plan{outcome: nudgewriteapi.OutcomeSuperseded}},
		{"a newer build writes", facts{changes: changes, branch: true, head: ours, headOurs: true, hasPR: true, pr: forge.PR{Title: s.Title, Body: body}, builtAt: "2026-11-28T09:02:00.000000000Z"},
			plan{push: true}},
		{"an unknown start is not compared", facts{changes: changes, branch: true, head: ours, headOurs: true, headHolds: true, hasPR: true, pr: forge.PR{Title: s.Title, Body: body}},
			plan{}},
		{"a malformed trailer fails open", facts{changes: changes, branch: true, head: forge.Commit{Message: "Nudgeflow-Built-At: 9999"}, headOurs: true, builtAt: "2026-11-28T09:00:00.000000000Z"},
			plan{push: true, open: true}},
		{"already current", facts{found: true, branch: true, head: ours, headOurs: true, builtAt: "2026-11-28T09:02:00.000000000Z"},
			plan{outcome: nudgewriteapi.OutcomeAlreadyCurrent}},
		{"not referenced", facts{}, plan{outcome: nudgewriteapi.OutcomeAlreadyCurrent}},
		{"a person's commit is kept", facts{changes: changes, branch: true, head: person, hasPR: true, pr: forge.PR{Body: body}},
			plan{outcome: nudgewriteapi.OutcomePersonCommitted}},
		{"a person's commit without a PR is kept too", facts{changes: changes, branch: true, head: person},
			plan{outcome: nudgewriteapi.OutcomePersonCommitted}},
		{"the rebase box lets it write", facts{changes: changes, branch: true, head: person, hasPR: true, pr: forge.PR{Title: s.Title, Body: "- [x] <!-- rebase-check -->"}},
			plan{push: true, edit: true}},
		{"a closed PR's branch of ours gets a new PR", facts{changes: changes, branch: true, head: ours, headOurs: true, headHolds: true},
			plan{open: true}},
		{"the title follows", facts{changes: changes, branch: true, head: ours, headOurs: true, headHolds: true, hasPR: true, pr: forge.PR{Title: "Update o to 0000000", Body: body}},
			plan{edit: true}},
		{"labels Renovate set are completed", facts{changes: changes, branch: true, head: ours, headOurs: true, headHolds: true, hasPR: true,
			pr: forge.PR{Title: s.Title, Body: debug, Labels: []string{"konflux-nudge"}}}, plan{edit: true, labels: []string{"team"}}},
		{"labels a person changed are left", facts{changes: changes, branch: true, head: ours, headOurs: true, headHolds: true, hasPR: true,
			pr: forge.PR{Title: s.Title, Body: debug, Labels: []string{"other"}}}, plan{edit: true}},
		{"a label no longer configured is removed", facts{changes: changes, branch: true, head: ours, headOurs: true, headHolds: true, hasPR: true,
			pr: forge.PR{Title: s.Title, Body: debugWith("konflux-nudge", "old"), Labels: []string{"old", "konflux-nudge"}}},
			plan{edit: true, labels: []string{"team"}, unlabel: []string{"old"}}},
		{"labels as configured are kept", facts{changes: changes, branch: true, head: ours, headOurs: true, headHolds: true, hasPR: true,
			pr: forge.PR{Title: s.Title, Body: debugWith("konflux-nudge", "team"), Labels: []string{"team", "konflux-nudge"}}},
			plan{edit: true}},
		{"a PR without recorded labels is left", facts{changes: changes, branch: true, head: ours, headOurs: true, headHolds: true, hasPR: true,
			pr: forge.PR{Title: s.Title, Body: "no debug record"}}, plan{edit: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := decide(c.f, s, body)
			if c.want.outcome != "" {
				require.Equal(t, c.want.outcome, got.outcome)
				require.NotEmpty(t, got.reason)
				return
			}
			got.reason = ""
			require.Equal(t, c.want, got)
		})
	}
}

// TestDecideAutomerge: the forge's auto-merge is enabled on opening, and again on
// an update where Renovate re-attempts it (GitHub).
func TestDecideAutomerge(t *testing.T) {
	s := shape{Title: "t", Automerge: true}
	changes := map[string][]byte{"Dockerfile": []byte("x")}
	ours := forge.Commit{SHA: "1"}
	require.True(t, decide(facts{changes: changes}, s, "b").automerge, "on opening")
	open := facts{changes: changes, branch: true, head: ours, headOurs: true, hasPR: true, pr: forge.PR{Title: "t", Body: "b"}}
	require.False(t, decide(open, s, "b").automerge, "Gitea: not again")
	open.reattempt = true
	require.True(t, decide(open, s, "b").automerge, "GitHub: again")
	s.Automerge = false
	require.False(t, decide(open, s, "b").automerge, "not configured")
}

func debugWith(labels ...string) string {
	return bodyOf(shape{Labels: labels}, "r", "", "", "main", "")
}

func TestUnsupported(t *testing.T) {
	opts := func(kv ...string) renovate.Options {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return renovate.ParseOptions(m)
	}
	for _, c := range []struct {
		o        renovate.Options
		platform string
		says     string
	}{
		{opts(), "forgejo", ""},
		{renovate.Options{}, "forgejo", ""}, // no ConfigMap: defaults
		{opts("labels", "a", "fileMatch", "x", "commitMessagePrefix", "p", "ignoreTests", "true", "automergeSchedule", "after 10pm"), "forgejo", ""},
		{opts("automerge", "true"), "forgejo", ""},
		{opts("automerge", "true", "automergeType", "pr"), "forgejo", ""},
		{opts("automerge", "true", "automergeType", "branch"), "forgejo", `automergeType "branch"`},
		{opts("automerge", "true", "automergeType", "pr-comment"), "forgejo", `automergeType "pr-comment"`},
		{opts("automerge", "true", "platformAutomerge", "false"), "forgejo", "without platformAutomerge"},
		{opts("automerge", "true", "ignoreTests", "true"), "forgejo", "ignoreTests"},
		{opts("automerge", "true", "automergeSchedule", "after 10pm"), "forgejo", "automergeSchedule"},
		{opts("automerge", "true", "gitLabIgnoreApprovals", "true"), "forgejo", "gitLabIgnoreApprovals"},
		{opts(), "gitlab", "GitLab"},
		{opts(), "github", ""},
		{opts("automerge", "true"), "github", ""},
		{opts("automerge", "true", "automergeType", "branch"), "github", "branch"},
		{opts(), "bitbucket", "bitbucket"},
	} {
		got := unsupported(c.o, c.platform)
		if c.says == "" {
			require.Empty(t, got, "%+v on %s", c.o, c.platform)
		} else {
			require.Contains(t, got, c.says, "%+v on %s", c.o, c.platform)
		}
	}
}

func TestParseAuthor(t *testing.T) {
	require.Equal(t, forge.Signature{Name: "nudgeflow", Email: "123456+nudgeflow[bot]@users.noreply.127.0.0.1"}, parseAuthor(gitAuthor))
	require.Equal(t, forge.Signature{}, parseAuthor(""))
	require.Equal(t, forge.Signature{}, parseAuthor("no address"))
}
