package nudgewrite

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// shape is the pull request Renovate makes of one nudge's config: what the writer
// writes so either can continue the other's branch. It is read off the very
// config the Renovate path launches with (renovate.GenerateConfig), never
// restated.
type shape struct {
	Branch string
	// Title is Renovate's commit message subject: "[prefix ]Update <nudging> to
	// <digest's 7 hex>[ suffix]".
	Title string
	// Message is the commit message: the title, a blank line, the commitBody
	// (source, Signed-off-by: gitAuthor, nudgeflow's trailers).
	Message string
	Labels  []string
	// Header and Footer are the prHeader and prFooter the body starts and ends with.
	Header, Footer string
	// Automerge: Renovate would enable the forge's auto-merge on opening the PR.
	Automerge bool
}

// rule is the config's package rule of the nudge (the one that is enabled).
func rule(cfg renovate.Config) renovate.PackageRule {
	for _, r := range cfg.PackageRules {
		if r.Enabled {
			return r
		}
	}
	return renovate.PackageRule{}
}

// digestShort is Renovate's newDigestShort: the first seven hex digits.
func digestShort(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 7 {
		return d[:7]
	}
	return d
}

var spaces = regexp.MustCompile(`\s+`)

// shapeOf is the pull request of cfg for a build whose digest is digest.
func shapeOf(cfg renovate.Config, nudging, nudged string, simpleBranch bool, digest string) shape {
	r := rule(cfg)
	// Renovate's commitMessage template: prefix, action, topic, extra, suffix;
	// trimmed, inner whitespace collapsed (updates/generate.ts).
	title := strings.Join([]string{r.CommitMessagePrefix, "Update", r.CommitMessageTopic, "to " + digestShort(digest), r.CommitMessageSuffix}, " ")
	title = spaces.ReplaceAllString(strings.TrimSpace(title), " ")
	return shape{
		Branch:    renovaterun.BranchName(nudging, nudged, simpleBranch),
		Title:     title,
		Message:   title + "\n\n" + r.CommitBody,
		Labels:    unique(cfg.Labels),
		Header:    r.PRHeader,
		Footer:    r.PRFooter,
		Automerge: cfg.Automerge && cfg.PlatformAutomerge,
	}
}

// unique keeps the first of each label, in order (Renovate's label set).
func unique(labels []string) []string {
	var out []string
	for _, l := range labels {
		if l != "" && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// debugData is Renovate's hidden record at the end of a body
// (<!--renovate-debug:base64(JSON)-->): a later Renovate run reads the labels it
// set from it, and the base branch.
type debugData struct {
	CreatedInVer string   `json:"createdInVer"`
	UpdatedInVer string   `json:"updatedInVer"`
	TargetBranch string   `json:"targetBranch"`
	Labels       []string `json:"labels,omitempty"`
}

// writerVersion stands in the debug record for Renovate's version.
const writerVersion = "nudgeflow-direct"

var debugRE = regexp.MustCompile(`\n?<!--renovate-debug:(.*?)-->\n?`)

// readDebug reads a body's debug record (ok false: none, or unreadable).
func readDebug(body string) (debugData, bool) {
	m := debugRE.FindStringSubmatch(body)
	if m == nil {
		return debugData{}, false
	}
	raw, err := base64.StdEncoding.DecodeString(m[1])
	if err != nil {
		return debugData{}, false
	}
	var d debugData
	if json.Unmarshal(raw, &d) != nil {
		return debugData{}, false
	}
	return d, true
}

var rebaseCheckRE = regexp.MustCompile(`- (\[[\sx]]) <!-- rebase-check -->`)

// rebaseRequested: the body's rebase/retry checkbox is ticked (Renovate's test).
func rebaseRequested(body string) bool {
	m := rebaseCheckRE.FindStringSubmatch(body)
	return m != nil && m[1] == "[x]"
}

// bodyOf is Renovate's body layout (update/pr/body): header, the updates table,
// the configuration notes, the rebase checkbox, the footer, and the debug record
// (kept from prev, the body found, when it has one).
func bodyOf(s shape, image, from, to, baseBranch, prev string) string {
	var b strings.Builder
	if s.Header != "" {
		b.WriteString(s.Header + "\n\n")
	}
	b.WriteString("\n\nThis PR contains the following updates:\n\n| Package | Update | Change |\n|---|---|---|\n")
	b.WriteString("| " + image + " | digest | `" + digestShort(from) + "` -> `" + digestShort(to) + "` |\n\n\n")
	b.WriteString("\n\n---\n\n### Configuration\n\n")
	b.WriteString("📅 **Schedule**: Branch creation - At any time (no schedule defined), Automerge - At any time (no schedule defined).\n\n")
	if s.Automerge {
		b.WriteString("🚦 **Automerge**: Enabled.\n\n")
	} else {
		b.WriteString("🚦 **Automerge**: Disabled by config. Please merge this manually once you are satisfied.\n\n")
	}
	b.WriteString("♻ **Rebasing**: Whenever PR is behind base branch, or you tick the rebase/retry checkbox.\n\n")
	b.WriteString("👻 **Immortal**: This PR will be recreated if closed unmerged. Get [config help](https://github.com/renovatebot/renovate/discussions) if that's undesired.\n\n")
	b.WriteString("\n\n---\n\n - [ ] <!-- rebase-check -->If you want to rebase/retry this PR, check this box\n\n")
	if s.Footer != "" {
		b.WriteString("\n---\n\n" + s.Footer)
	}
	body := strings.TrimSpace(b.String())
	body = regexp.MustCompile(`\n\n\n+`).ReplaceAllString(body, "\n\n")
	d := debugData{CreatedInVer: writerVersion, UpdatedInVer: writerVersion, TargetBranch: baseBranch, Labels: s.Labels}
	if old, ok := readDebug(prev); ok {
		d.CreatedInVer = old.CreatedInVer
		if old.Labels == nil {
			d.Labels = nil // Renovate keeps a PR without recorded labels so
		}
	}
	raw, _ := json.Marshal(d)
	return body + "\n<!--renovate-debug:" + base64.StdEncoding.EncodeToString(raw) + "-->\n"
}

// previousDigest is the digest the base's files held (the table's "from"):
// Renovate's currentDigest of the first reference found, in path order, that
// differs from to. Its regex, per repository: the repository, any tag (greedy, to
// the line's last digest), the digest.
func previousDigest(before map[string]string, repos []string, to string) string {
	paths := make([]string, 0, len(before))
	for p := range before {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		for _, r := range repos {
			re := regexp.MustCompile(regexp.QuoteMeta(r) + `(:.*)?@(sha256:[a-f0-9]+)`)
			for _, m := range re.FindAllStringSubmatch(before[p], -1) {
				if m[2] != to {
					return m[2]
				}
			}
		}
	}
	return ""
}

// runName names the direct write in its commit's Nudgeflow-Run trailer (a run of
// Renovate names its PipelineRun there): a name of the workflow, as a
// Kubernetes name is written, so the branch check reads it.
func runName(workflowID string) string {
	sum := sha256.Sum256([]byte(workflowID))
	return "nudge-direct-" + hex.EncodeToString(sum[:])[:12]
}
