package renovate_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/test/localenv"
)

// diffDocsPage and diffDocsSection are where the deliberate differences are
// listed for people: one line per difference, "- **`name`**: reason".
const (
	diffDocsPage    = "docs/nudging.md"
	diffDocsSection = "## Direct writer vs Renovate: deliberate differences"
)

var docsDifference = regexp.MustCompile("^- \\*\\*`([^`]+)`\\*\\*: (.+)$")

// TestNudgeDiffDeliberateDifferencesDocumented: the deliberate differences
// TestNudgeDiff accepts are exactly the ones the docs list, with the same
// reasons, in the same order. It starts no server.
func TestNudgeDiffDeliberateDifferencesDocumented(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(localenv.RepoRoot(), diffDocsPage))
	require.NoError(t, err)
	_, section, found := strings.Cut(string(raw), "\n"+diffDocsSection+"\n")
	require.True(t, found, "%s has the section %q", diffDocsPage, diffDocsSection)
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var inDocs []string
	for _, line := range strings.Split(section, "\n") {
		if m := docsDifference.FindStringSubmatch(line); m != nil {
			inDocs = append(inDocs, m[1]+": "+m[2])
		}
	}
	var inTest []string
	for _, d := range deliberateDifferences {
		require.NotContains(t, d.Reason, "\n", "%s: a reason is one line", d.Name)
		inTest = append(inTest, d.Name+": "+d.Reason)
	}
	require.Equal(t, inTest, inDocs, "the deliberate differences in %s (section %q) and in deliberateDifferences (diff_test.go)", diffDocsPage, diffDocsSection)
}

// TestNudgeDiffShowsLinesInOrder: a difference is printed line by line in
// order, so that a reordered or repeated line shows, not only a changed one.
func TestNudgeDiffShowsLinesInOrder(t *testing.T) {
	got := lineDiff("label\npull_push\npull_push\nchange_title", "label\npull_push\nchange_title")
	require.Equal(t, "    label\n    pull_push\n  - pull_push\n    change_title\n", got)
	got = lineDiff("a\nb", "b\na")
	require.Equal(t, "  + b\n    a\n  - b\n", got)
}
