package changegroupcr

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
)

// The forge of a nudged repository: the git-provider annotation wins, else the host
// names it (build-service's rule: forgejo, gitea and codeberg hosts are Forgejo),
// else GitHub.
func TestRepoOfProvider(t *testing.T) {
	for _, tc := range []struct{ url, annotation, want string }{
		{"https://github.com/org/repo", "", "github"},
		{"https://gitlab.example.com/org/repo", "", "gitlab"},
		{"https://codeberg.org/org/repo.git", "", "forgejo"},
		{"https://Gitea.example.com/org/repo", "", "forgejo"},
		{"https://forgejo.example.net/org/repo", "", "forgejo"},
		{"https://git.example.net/org/repo", "gitea", "forgejo"}, // the alias, normalised (forge.ProviderOf)
		{"https://git.example.net/org/repo", "", "github"},       // GitHub Enterprise hosts are named anything
		{"https://git.example.net/org/repo", "forgejo", "forgejo"},
	} {
		c := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
		if tc.annotation != "" {
			c.Annotations = map[string]string{mirrorv1alpha1.AnnotationGitProvider: tc.annotation}
		}
		c.Spec.Source.GitSource = &mirrorv1alpha1.GitSource{URL: tc.url}
		r, err := repoOf(c)
		if err != nil || r.Provider != tc.want {
			t.Errorf("%s (%q): provider %q, %v; want %q", tc.url, tc.annotation, r.Provider, err, tc.want)
		}
	}
}
