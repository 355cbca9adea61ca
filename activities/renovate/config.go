package renovate

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// ConfigMap tiers and annotations (verbatim from build-service / integration-service,
// reference/konflux-nudging.md §2–§3).
const (
	// NamespaceConfigMap is the namespace-wide tier.
	NamespaceConfigMap = "namespace-wide-nudging-renovate-config"
	// AnnotationConfigMap on the nudged Component names a ConfigMap that REPLACES the
	// namespace-wide one (old form; read with konflux.NudgeRenovateConfigMapKey).
	AnnotationConfigMap = konflux.AnnotationNudgeRenovateConfigMap
	// AnnotationSimpleBranch on the nudging Component drops the nudged prefix from
	// the branch (old form; read with konflux.NudgeSimpleBranchKey).
	AnnotationSimpleBranch = konflux.AnnotationNudgeSimpleBranch
	// defaultNudgeFiles is build-service's DefaultNudgeFiles.
	defaultNudgeFiles = ".*Dockerfile.*, .*.yaml, .*Containerfile.*"
	// NudgeLabel marks nudge PRs (MintMaker ignores PRs with it).
	NudgeLabel = "konflux-nudge"
	// BranchPrefix of every nudge branch.
	BranchPrefix = renovaterun.BranchPrefix
)

// Options are the user's knobs from one ConfigMap tier.
type Options struct {
	Automerge             bool
	AutomergeType         string
	PlatformAutomerge     bool
	IgnoreTests           bool
	GitLabIgnoreApprovals bool
	CommitMessagePrefix   string
	CommitMessageSuffix   string
	FileMatch             []string
	AutomergeSchedule     []string
	Labels                []string
}

// ParseOptions reads a ConfigMap's data with build-service's rules: booleans through
// ParseBool (a bad value is ignored), platformAutomerge true unless the key says
// otherwise, fileMatch and labels split on ",", automergeSchedule on ";". A missing
// ConfigMap is not parsed at all: its Options are the zero value (platformAutomerge
// false), exactly as build-service returns early.
func ParseOptions(data map[string]string) Options {
	o := Options{PlatformAutomerge: true}
	parseBool := func(key string, into *bool) {
		if v, ok := data[key]; ok {
			if b, err := strconv.ParseBool(v); err == nil {
				*into = b
			}
		}
	}
	parseBool("automerge", &o.Automerge)
	parseBool("platformAutomerge", &o.PlatformAutomerge)
	parseBool("ignoreTests", &o.IgnoreTests)
	parseBool("gitLabIgnoreApprovals", &o.GitLabIgnoreApprovals)
	o.AutomergeType = data["automergeType"]
	o.CommitMessagePrefix = data["commitMessagePrefix"]
	o.CommitMessageSuffix = data["commitMessageSuffix"]
	o.FileMatch = parseFileMatch(data)
	o.AutomergeSchedule = splitList(data["automergeSchedule"], ";")
	o.Labels = splitList(data["labels"], ",")
	return o
}

func splitList(s, sep string) []string {
	var out []string
	for _, p := range strings.Split(s, sep) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// everyFile is the file pattern of a ConfigMap whose fileMatch key is empty.
const everyFile = ".*"

// parseFileMatch reads the fileMatch key. Present but empty means every file:
// build-service splits "" into [""], whose empty regex matches every path, and uses
// it rather than the annotation or the default. An empty entry in a non-empty list
// (a stray comma) is dropped: build-service would match every file there too, which
// no one writing "a, b," means.
func parseFileMatch(data map[string]string) []string {
	v, ok := data["fileMatch"]
	if !ok {
		return nil
	}
	if strings.TrimSpace(v) == "" {
		return []string{everyFile}
	}
	return splitList(v, ",")
}

// FileMatch resolves the file patterns: the ConfigMap's fileMatch, else the build
// PipelineRun's build-nudge-files annotation, else build-service's default.
func FileMatch(o Options, buildAnnotation string) []string {
	if len(o.FileMatch) > 0 {
		return o.FileMatch
	}
	if p := splitList(buildAnnotation, ","); len(p) > 0 {
		return p
	}
	return splitList(defaultNudgeFiles, ",")
}

// ConfigInput is everything one target's Renovate config is made of. No secrets.
type ConfigInput struct {
	Platform  string // github | gitlab | forgejo
	Endpoint  string
	Username  string
	GitAuthor string
	// Repository is "org/repo" of the nudged component; BaseBranch its branch.
	Repository string
	BaseBranch string
	Nudging    string
	Nudged     string
	// BuiltRepo and BuiltTag are the nudging image (IMAGE_URL split at the last ":").
	BuiltRepo string
	BuiltTag  string
	// DistributionRepos are release repositories that alias the built one.
	DistributionRepos []string
	// RepoAtSHA links the source commit in PR texts.
	RepoAtSHA    string
	SimpleBranch bool
	FileMatch    []string
	Options      Options
	// BuiltAt is the build's start and Run the run's name: the commit's trailers
	// (TrailerBuiltAt, TrailerRun) that a later run's step compares with its own
	// build (branchcheck.go). Zero BuiltAt writes none.
	BuiltAt time.Time
	Run     string
}

// Config is the generated Renovate configuration (build-service's shape).
// Username and GitAuthor are left out when empty: Renovate then resolves them
// from the token (BasicAuthIdentity).
type Config struct {
	Platform              string            `json:"platform"`
	Username              string            `json:"username,omitempty"`
	GitAuthor             string            `json:"gitAuthor,omitempty"`
	Onboarding            bool              `json:"onboarding"`
	RequireConfig         string            `json:"requireConfig"`
	Repositories          []Repository      `json:"repositories"`
	EnabledManagers       []string          `json:"enabledManagers"`
	Endpoint              string            `json:"endpoint"`
	ForkProcessing        string            `json:"forkProcessing"`
	Extends               []string          `json:"extends"`
	DependencyDashboard   bool              `json:"dependencyDashboard"`
	Labels                []string          `json:"labels"`
	Automerge             bool              `json:"automerge"`
	AutomergeType         string            `json:"automergeType,omitempty"`
	PlatformAutomerge     bool              `json:"platformAutomerge"`
	IgnoreTests           bool              `json:"ignoreTests"`
	GitLabIgnoreApprovals bool              `json:"gitLabIgnoreApprovals"`
	AutomergeSchedule     []string          `json:"automergeSchedule,omitempty"`
	RegistryAliases       map[string]string `json:"registryAliases,omitempty"`
	CustomManagers        []CustomManager   `json:"customManagers"`
	PackageRules          []PackageRule     `json:"packageRules"`
}

// Repository is one entry of repositories.
type Repository struct {
	Repository   string   `json:"repository"`
	BaseBranches []string `json:"baseBranches,omitempty"`
}

// CustomManager is the regex manager on digest references.
type CustomManager struct {
	CustomType           string   `json:"customType"`
	FileMatch            []string `json:"fileMatch"`
	DatasourceTemplate   string   `json:"datasourceTemplate"`
	MatchStrings         []string `json:"matchStrings"`
	CurrentValueTemplate string   `json:"currentValueTemplate"`
	DepNameTemplate      string   `json:"depNameTemplate"`
}

// PackageRule is one entry of packageRules.
type PackageRule struct {
	MatchPackagePatterns   []string `json:"matchPackagePatterns,omitempty"`
	MatchPackageNames      []string `json:"matchPackageNames,omitempty"`
	Enabled                bool     `json:"enabled"`
	GroupName              string   `json:"groupName,omitempty"`
	BranchPrefix           string   `json:"branchPrefix,omitempty"`
	BranchTopic            string   `json:"branchTopic,omitempty"`
	AdditionalBranchPrefix *string  `json:"additionalBranchPrefix,omitempty"`
	CommitMessageTopic     string   `json:"commitMessageTopic,omitempty"`
	CommitMessagePrefix    string   `json:"commitMessagePrefix,omitempty"`
	CommitMessageSuffix    string   `json:"commitMessageSuffix,omitempty"`
	CommitBody             string   `json:"commitBody,omitempty"`
	PRHeader               string   `json:"prHeader,omitempty"`
	PRFooter               string   `json:"prFooter,omitempty"`
	RecreateWhen           string   `json:"recreateWhen,omitempty"`
	RebaseWhen             string   `json:"rebaseWhen,omitempty"`
}

// GenerateConfig builds one target's Renovate config.
func GenerateConfig(in ConfigInput) Config {
	repos := append([]string{in.BuiltRepo}, in.DistributionRepos...)
	matchStrings := make([]string, 0, len(repos))
	for _, r := range repos {
		matchStrings = append(matchStrings, regexp.QuoteMeta(r)+`(:.*)?@(?<currentDigest>sha256:[a-f0-9]+)`)
	}
	var aliases map[string]string
	if len(in.DistributionRepos) > 0 {
		aliases = map[string]string{}
		for _, d := range in.DistributionRepos {
			aliases[d] = in.BuiltRepo
		}
	}
	labels := append([]string{NudgeLabel}, in.Options.Labels...)
	additional := in.Nudged + "-"
	if in.SimpleBranch {
		additional = ""
	}
	var branches []string
	if in.BaseBranch != "" {
		branches = []string{in.BaseBranch}
	}
	fileMatch := in.FileMatch
	if len(fileMatch) == 0 {
		fileMatch = FileMatch(in.Options, "")
	}
	return Config{
		Platform:              in.Platform,
		Username:              in.Username,
		GitAuthor:             in.GitAuthor,
		Onboarding:            false,
		RequireConfig:         "ignored",
		Repositories:          []Repository{{Repository: in.Repository, BaseBranches: branches}},
		EnabledManagers:       []string{"custom.regex"},
		Endpoint:              in.Endpoint,
		ForkProcessing:        "enabled",
		Extends:               []string{},
		DependencyDashboard:   false,
		Labels:                labels,
		Automerge:             in.Options.Automerge,
		AutomergeType:         in.Options.AutomergeType,
		PlatformAutomerge:     in.Options.PlatformAutomerge,
		IgnoreTests:           in.Options.IgnoreTests,
		GitLabIgnoreApprovals: in.Options.GitLabIgnoreApprovals,
		AutomergeSchedule:     in.Options.AutomergeSchedule,
		RegistryAliases:       aliases,
		CustomManagers: []CustomManager{{
			CustomType:           "regex",
			FileMatch:            fileMatch,
			DatasourceTemplate:   "docker",
			MatchStrings:         matchStrings,
			CurrentValueTemplate: in.BuiltTag,
			DepNameTemplate:      in.BuiltRepo,
		}},
		PackageRules: []PackageRule{
			{MatchPackagePatterns: []string{"*"}, Enabled: false},
			{
				MatchPackageNames:      repos,
				GroupName:              "Component Update " + in.Nudging,
				BranchPrefix:           BranchPrefix,
				BranchTopic:            in.Nudging,
				AdditionalBranchPrefix: &additional,
				CommitMessageTopic:     in.Nudging,
				CommitMessagePrefix:    in.Options.CommitMessagePrefix,
				CommitMessageSuffix:    in.Options.CommitMessageSuffix,
				CommitBody:             fmt.Sprintf("%s\n\nSigned-off-by: %s%s", createdFrom(in), signOff(in.GitAuthor), commitTrailers(in)),
				PRHeader:               createdFrom(in),
				PRFooter:               "To execute skipped test pipelines write comment `/ok-to-test`\nThis is Konflux nudging PR, not Mintmaker.",
				RecreateWhen:           "always",
				RebaseWhen:             "behind-base-branch",
				Enabled:                true,
			},
		},
	}
}

// createdFrom is the header of the PR and the commit: build-service's "Image
// created from '<repo>?rev=<sha>'", or, for a build whose source nudgeflow could
// not tell, the component it is a build of, never an empty source.
func createdFrom(in ConfigInput) string {
	if in.RepoAtSHA == "" {
		return fmt.Sprintf("Image created by a build of component %s", in.Nudging)
	}
	return fmt.Sprintf("Image created from '%s'", in.RepoAtSHA)
}

// signOff is the Signed-off-by identity of the commit body: gitAuthor, or, when
// Renovate discovers it (BasicAuthIdentity), Renovate's template of the gitAuthor
// it commits as (an option templates may read).
func signOff(gitAuthor string) string {
	if gitAuthor == "" {
		return "{{{gitAuthor}}}"
	}
	return gitAuthor
}

// JSON renders the config as the file Renovate reads.
func (c Config) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("rendering the Renovate config: %w", err)
	}
	return b, nil
}

var sha40 = regexp.MustCompile(`[a-f0-9]{40}`)

// CommitFromRepoLink extracts the commit of a repo-at-sha link defensively: GitLab
// `.../-/tree/<sha>` and GitHub `...?rev=<sha>` both give the bare sha.
func CommitFromRepoLink(link string) string {
	return sha40.FindString(link)
}
