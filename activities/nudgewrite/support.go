package nudgewrite

import (
	"fmt"
	"strings"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/internal/forge"
)

// What the writer does of the tenant's Renovate ConfigMap (renovate.Options, the
// keys build-service reads) and what it leaves to Renovate. Supported, with the
// result Renovate gives:
//   - fileMatch (else the build's build-nudge-files, else build-service's default):
//     which files are rewritten;
//   - labels: konflux-nudge and these, on the pull request (on Forgejo and Gitea
//     only those the repository or its organization defines, as Renovate);
//   - commitMessagePrefix, commitMessageSuffix: the title and the commit's subject;
//   - automerge with automergeType pr (or unset) and platformAutomerge: the forge's
//     own auto-merge, enabled on opening the pull request, as Renovate does (and,
//     on GitHub, enabled again on each update, Renovate's reattempt), where the
//     repository allows it (Gitea >= 1.24, Forgejo >= 10; GitHub's
//     autoMergeAllowed);
//   - ignoreTests and gitLabIgnoreApprovals without automerge: no effect on the
//     pull request (Renovate reads them only to merge);
//   - automergeSchedule without automerge: no effect either.
//
// Left to Renovate (Fallback, nothing written), because the result would differ:
//   - automerge with automergeType branch or pr-comment (no pull request, or a
//     comment a bot acts on);
//   - automerge without platformAutomerge: Renovate merges on a later run of its
//     own once the checks pass, which the writer does not schedule;
//   - automerge with ignoreTests: Renovate merges at once, whatever the checks say;
//   - automerge with an automergeSchedule: Renovate merges only inside it;
//   - automerge with gitLabIgnoreApprovals (GitLab's approval rules);
//   - a forge whose commits the writer cannot make as Renovate's gitAuthor:
//     GitLab (its API records the token's user as committer; Renovate pushes over
//     git as gitAuthor). On GitHub the writer takes Renovate's
//     credentials in Renovate's order: the GitHub App's token where the App is
//     installed (platform-native commits, the App's bot their author, GitHub their
//     committer, as Renovate's), else the basic-auth Secret (commits as gitAuthor);
//   - a token whose identity only Renovate resolves (a GitHub installation token
//     in a basic-auth Secret: BasicAuthIdentity leaves gitAuthor to Renovate).

// unsupported says why the writer leaves a nudge with these options on platform
// to Renovate ("" when it writes it itself).
func unsupported(o renovate.Options, platform string) string {
	switch forge.NormalizeProvider(platform) {
	case forge.ProviderForgejo, forge.ProviderGitHub:
	case forge.ProviderGitLab:
		return "the repository is on GitLab, whose API commits as the token's user, not as Renovate's gitAuthor"
	default:
		return fmt.Sprintf("the repository is on %s, where the direct writer does not commit", platform)
	}
	if !o.Automerge {
		return ""
	}
	var why []string
	switch o.AutomergeType {
	case "", "pr":
	default:
		why = append(why, fmt.Sprintf("automergeType %q", o.AutomergeType))
	}
	if !o.PlatformAutomerge {
		why = append(why, "automerge without platformAutomerge (Renovate merges on a later run)")
	}
	if o.IgnoreTests {
		why = append(why, "automerge with ignoreTests (Renovate merges at once)")
	}
	if len(o.AutomergeSchedule) > 0 {
		why = append(why, "automergeSchedule")
	}
	if o.GitLabIgnoreApprovals {
		why = append(why, "gitLabIgnoreApprovals")
	}
	if len(why) == 0 {
		return ""
	}
	return "the Renovate configuration asks for " + strings.Join(why, ", ") + ", which only Renovate does"
}
