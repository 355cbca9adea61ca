package renovate

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/activities/renovate/renovatetest"
)

func TestParseOptionsFollowsBuildServiceRules(t *testing.T) {
	o := ParseOptions(map[string]string{
		"automerge":           "true",
		"automergeType":       "pr",
		"ignoreTests":         "not-a-bool", // ignored: stays false
		"commitMessagePrefix": "chore(deps):",
		"fileMatch":           " .*Dockerfile, manifests/.*\\.yaml ,",
		"automergeSchedule":   "* 22-23,0-4 * * *; * * * * 0,6",
		"labels":              "customLabel1, customLabel2",
	})
	require.True(t, o.Automerge)
	require.Equal(t, "pr", o.AutomergeType)
	require.True(t, o.PlatformAutomerge, "a ConfigMap without the key means Renovate's default: true")
	require.False(t, o.IgnoreTests)
	require.Equal(t, []string{".*Dockerfile", `manifests/.*\.yaml`}, o.FileMatch)
	require.Equal(t, []string{"* 22-23,0-4 * * *", "* * * * 0,6"}, o.AutomergeSchedule)
	require.Equal(t, []string{"customLabel1", "customLabel2"}, o.Labels)

	require.False(t, ParseOptions(map[string]string{"platformAutomerge": "false"}).PlatformAutomerge)
	require.False(t, Options{}.PlatformAutomerge, "no ConfigMap: build-service's zero value, platformAutomerge false")
}

// build-service's edge case: fileMatch present and empty in the ConfigMap means
// every file (not the annotation, not the default).
func TestEmptyFileMatchMeansEveryFile(t *testing.T) {
	for _, v := range []string{"", "  "} {
		o := ParseOptions(map[string]string{"fileMatch": v})
		require.Equal(t, []string{everyFile}, FileMatch(o, "from-annotation"), "%q", v)
	}
	require.Equal(t, []string{"from-annotation"}, FileMatch(ParseOptions(map[string]string{"automerge": "true"}), "from-annotation"),
		"no key: the annotation")
	require.Regexp(t, everyFile, "any/path/at/all.txt")
}

func TestFileMatchPrecedence(t *testing.T) {
	cm := Options{FileMatch: []string{"from-configmap"}}
	require.Equal(t, []string{"from-configmap"}, FileMatch(cm, "from-annotation"))
	require.Equal(t, []string{"from-annotation", "b"}, FileMatch(Options{}, "from-annotation, b"))
	require.Equal(t, []string{".*Dockerfile.*", ".*.yaml", ".*Containerfile.*"}, FileMatch(Options{}, ""))
}

func TestCommitFromRepoLink(t *testing.T) {
	sha := "0123456789abcdef0123456789abcdef01234567"
	require.Equal(t, sha, CommitFromRepoLink("https://gitlab.com/org/repo/-/tree/"+sha))
	require.Equal(t, sha, CommitFromRepoLink("https://github.com/org/repo?rev="+sha))
	require.Empty(t, CommitFromRepoLink(""))
}

// Shapes is every shape of config the generator makes: defaults, both ConfigMap
// knobs, simple branch, release-repository aliases, each platform.
func Shapes() map[string]ConfigInput {
	base := ConfigInput{
		Platform: "github", Endpoint: "https://api.github.com/", Username: "red-hat-konflux",
		GitAuthor:  "red-hat-konflux <123456+red-hat-konflux[bot]@users.noreply.github.com>",
		Repository: "org/bundle", BaseBranch: "main", Nudging: "operand", Nudged: "bundle",
		BuiltRepo: "quay.io/org/operand", BuiltTag: "0123456789abcdef0123456789abcdef01234567",
		RepoAtSHA: "https://github.com/org/operand?rev=0123456789abcdef0123456789abcdef01234567",
	}
	defaults := base
	configured := base
	configured.Options = ParseOptions(map[string]string{
		"automerge": "true", "automergeType": "pr", "platformAutomerge": "true", "ignoreTests": "true",
		"commitMessagePrefix": "chore(deps): ", "commitMessageSuffix": " [nudge]",
		"fileMatch": `.*Dockerfile.*, bundle/manifests/.*\.yaml`, "automergeSchedule": "* 22-23,0-4 * * *; * * * * 0,6",
		"labels": "customLabel1, customLabel2",
	})
	simple := base
	simple.SimpleBranch = true
	simple.FileMatch = FileMatch(Options{}, ".*Containerfile, .*\\.env")
	aliases := base
	aliases.DistributionRepos = []string{"registry.redhat.io/org/operand", "quay.io/redhat-prod/org----operand"}
	gitlab := base
	gitlab.Platform, gitlab.Endpoint = "gitlab", "https://gitlab.com/api/v4/"
	gitlab.Options = ParseOptions(map[string]string{"gitLabIgnoreApprovals": "true", "automerge": "true", "automergeType": "branch"})
	forgejo := base
	forgejo.Platform, forgejo.Endpoint = "forgejo", "https://codeberg.org/api/v1/"
	forgejo.BaseBranch = ""
	ghe := base
	ghe.Endpoint = "https://github.example.com/api/v3/"
	selfHostedGitLab := gitlab
	selfHostedGitLab.Endpoint = "https://git.example.org/api/v4/"
	return map[string]ConfigInput{
		"defaults": defaults, "configmap": configured, "simple-branch": simple,
		"release-aliases": aliases, "gitlab": gitlab, "forgejo": forgejo,
		"github-enterprise": ghe, "gitlab-self-hosted": selfHostedGitLab,
	}
}

func TestGeneratedConfigShape(t *testing.T) {
	s := Shapes()
	c := GenerateConfig(s["configmap"])
	require.Equal(t, []string{NudgeLabel, "customLabel1", "customLabel2"}, c.Labels, "custom labels are appended")
	require.True(t, c.Automerge)
	require.Equal(t, "pr", c.AutomergeType)
	require.Equal(t, []string{".*Dockerfile.*", `bundle/manifests/.*\.yaml`}, c.CustomManagers[0].FileMatch)
	require.Equal(t, []string{`quay\.io/org/operand(:.*)?@(?<currentDigest>sha256:[a-f0-9]+)`}, c.CustomManagers[0].MatchStrings)
	rule := c.PackageRules[1]
	require.Equal(t, "bundle-", *rule.AdditionalBranchPrefix)
	require.Equal(t, BranchPrefix, rule.BranchPrefix)
	require.Equal(t, "operand", rule.BranchTopic)
	require.Equal(t, "chore(deps): ", rule.CommitMessagePrefix)

	d := GenerateConfig(s["defaults"])
	require.Equal(t, []string{NudgeLabel}, d.Labels)
	require.False(t, d.PlatformAutomerge)
	require.Empty(t, d.AutomergeType)
	require.Equal(t, []string{".*Dockerfile.*", ".*.yaml", ".*Containerfile.*"}, d.CustomManagers[0].FileMatch)

	sb := GenerateConfig(s["simple-branch"])
	require.Equal(t, "", *sb.PackageRules[1].AdditionalBranchPrefix)
	raw, err := sb.JSON()
	require.NoError(t, err)
	var generic map[string]any
	require.NoError(t, json.Unmarshal(raw, &generic))
	require.Contains(t, generic["packageRules"].([]any)[1], "additionalBranchPrefix", "an empty prefix is written, not omitted")

	a := GenerateConfig(s["release-aliases"])
	require.Equal(t, map[string]string{"registry.redhat.io/org/operand": "quay.io/org/operand", "quay.io/redhat-prod/org----operand": "quay.io/org/operand"}, a.RegistryAliases)
	require.Len(t, a.CustomManagers[0].MatchStrings, 3)
	require.Equal(t, []string{"quay.io/org/operand", "registry.redhat.io/org/operand", "quay.io/redhat-prod/org----operand"}, a.PackageRules[1].MatchPackageNames)
}

// Every generated shape passes Renovate's own validator, alone and with the
// registry host rules the run adds through RENOVATE_HOST_RULES.
func TestEveryShapePassesRenovateConfigValidator(t *testing.T) {
	rules, err := json.Marshal([]HostRule{{MatchHost: "quay.io", Username: "org+robot", Password: "not-a-real-password"}})
	require.NoError(t, err)
	configs := map[string][]byte{}
	for name, in := range Shapes() {
		raw, err := GenerateConfig(in).JSON()
		require.NoError(t, err)
		configs[name] = raw
		withRules, err := renovatetest.WithHostRules(raw, rules)
		require.NoError(t, err)
		configs[name+"-host-rules"] = withRules
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	outputs, err := renovatetest.Validate(ctx, configs)
	require.NoError(t, err)
	require.Len(t, outputs, len(configs))
}

// The validator is live: it rejects what Renovate would reject.
func TestRenovateConfigValidatorRejectsAnUnknownOption(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := renovatetest.Validate(ctx, map[string][]byte{"bad": []byte(`{"platform":"github","labelz":["x"]}`)})
	require.ErrorContains(t, err, "Invalid configuration option: labelz")
}
