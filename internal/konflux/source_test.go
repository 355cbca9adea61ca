package konflux

import (
	"strings"
	"testing"
)

func TestSourceLinkFallsBackToPipelinesAsCode(t *testing.T) {
	sha := strings.Repeat("a", 40)
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		repoURL     string
		want        string
	}{
		{"build-service's annotation", map[string]string{AnnotationRepo: "https://x/o/r?rev=1", AnnotationPaCSHA: sha}, "https://c/o/r", "https://x/o/r?rev=1"},
		{"its new form first", map[string]string{RepoKey.New: "new", AnnotationRepo: "old"}, "", "new"},
		{"PaC's sha on the Component's repository", map[string]string{AnnotationPaCSHA: sha, AnnotationPaCRepoURL: "https://pac/o/r"}, "https://c/o/r.git", "https://c/o/r?rev=" + sha},
		{"PaC's sha on PaC's repo-url", map[string]string{AnnotationPaCSHA: sha, AnnotationPaCRepoURL: "https://pac/o/r/"}, "", "https://pac/o/r?rev=" + sha},
		{"no sha", map[string]string{AnnotationPaCRepoURL: "https://pac/o/r"}, "https://c/o/r", ""},
		{"no repository", map[string]string{AnnotationPaCSHA: sha}, "", ""},
	} {
		if got := SourceLink(tc.annotations, tc.repoURL); got != tc.want {
			t.Errorf("%s: SourceLink = %q, want %q", tc.name, got, tc.want)
		}
	}
}
