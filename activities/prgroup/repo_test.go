package prgroup

import "testing"

// A PR group's repository names its forge as a ChangeGroup's does (forge.ProviderOf:
// the annotation, else the host, else GitHub).
func TestRepoOfProvider(t *testing.T) {
	for _, tc := range []struct{ url, annotation, want string }{
		{"https://github.com/org/repo", "", "github"},
		{"https://gitlab.example.com/org/repo", "", "gitlab"},
		{"https://codeberg.org/org/repo.git", "", "forgejo"},
		{"https://git.example.net/org/repo", "gitea", "forgejo"},
		{"https://git.example.net/org/repo", "", "github"},
	} {
		if got := repoOf("ns", tc.url, "main", tc.annotation).Provider; got != tc.want {
			t.Errorf("%s (%q): provider %q, want %q", tc.url, tc.annotation, got, tc.want)
		}
	}
}
