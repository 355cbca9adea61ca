package ownershiptest

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	pacv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/pipelinesascode/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

func TestRepositoryIsNamedAsBuildServiceNamesIt(t *testing.T) {
	for url, want := range map[string]string{
		"https://github.com/user/test-component-repository": "github-com-user-test-component-repository",
		"https://github.com/User/Repo.git":                  "github-com-user-repo",
		"http://127.0.0.1:8180/demo/operator-bundle/":       "127-0-0-1-8180-demo-operator-bundle",
		"https://gitlab.example.com/group/sub/my_project":   "gitlab-example-com-group-sub-my-project",
		"https://git.example.com/org/a..b--c":               "git-example-com-org-a-b-c",
	} {
		r := Repository("ns", url)
		if r.Name != want || r.Spec.URL != gitRepoURL(url) {
			t.Errorf("%s: %s %s, want %s", url, r.Name, r.Spec.URL, want)
		}
	}
}

// A Component created through the onboarding client gets its Repository before
// Create returns, once however often; another URL under a taken name gets a
// suffixed one; a Component without a git URL, or a dry run, gets none.
func TestOnboardingClient(t *testing.T) {
	ctx := context.Background()
	c := Onboarding(fake.NewClientBuilder().WithScheme(kube.NewScheme()).Build())
	comp := func(name, url string) *mirrorv1alpha1.Component {
		cm := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
		if url != "" {
			cm.Spec.Source.GitSource = &mirrorv1alpha1.GitSource{URL: url}
		}
		return cm
	}
	for _, cm := range []*mirrorv1alpha1.Component{
		comp("a", "https://github.com/org/repo.git"), comp("b", "https://github.com/org/repo"), comp("c", ""),
		comp("d", "https://github.com/org/Repo"), // same name, another URL as written
	} {
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Create(ctx, comp("e", "https://github.com/org/dry"), client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	var list pacv1alpha1.RepositoryList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Fatalf("%d Repositories, want 2: %+v", len(list.Items), list.Items)
	}
	urls := map[string]string{}
	for _, r := range list.Items {
		urls[r.Spec.URL] = r.Name
	}
	if urls["https://github.com/org/repo"] != "github-com-org-repo" || len(urls["https://github.com/org/Repo"]) != len("github-com-org-repo-")+5 {
		t.Fatalf("repositories %v", urls)
	}
}
