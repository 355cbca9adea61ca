package github

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	gogithub "github.com/google/go-github/v92/github"
)

// TestLabelsAndTheRenovateProbes reads through go-github what Renovate's github
// platform relies on besides pull requests: the GHES root's version header, the
// repository's labels, labels added to a pull request (a missing one created as
// GitHub does) and shown on it.
func TestLabelsAndTheRenovateProbes(t *testing.T) {
	s, gh, _ := setup(t)
	ctx := context.Background()
	req, _ := http.NewRequest(http.MethodHead, s.APIURL(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-GitHub-Enterprise-Version") != enterpriseVersion {
		t.Fatalf("HEAD /api/v3/: %d %v", resp.StatusCode, resp.Header)
	}

	if err := s.CreateLabel("org", "bundle", "konflux-nudge", "00aabb"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Issues.CreateLabel(ctx, "org", "bundle", gogithub.CreateIssueLabelRequest{Name: "konflux-nudge"}); err == nil || !strings.Contains(err.Error(), "422") {
		t.Fatalf("creating an existing label: %v", err)
	}
	number, _, err := s.OpenPR("org", "bundle", "cg", "main", bot, map[string]string{"Dockerfile": "FROM y\n"}, "bump")
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := gh.Issues.AddLabelsToIssue(ctx, "org", "bundle", number, []string{"konflux-nudge", "new-one"})
	if err != nil || len(got) != 2 {
		t.Fatalf("add labels: %v %+v", err, got)
	}
	all, _, err := gh.Issues.ListLabels(ctx, "org", "bundle", nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range all {
		names = append(names, l.GetName())
	}
	if !slices.Equal(names, []string{"konflux-nudge", "new-one"}) {
		t.Fatalf("repository labels %v", names)
	}
	pr, _, err := gh.PullRequests.Get(ctx, "org", "bundle", number)
	if err != nil || len(pr.Labels) != 2 || pr.Labels[0].GetName() != "konflux-nudge" {
		t.Fatalf("PR labels: %v %+v", err, pr.Labels)
	}
	if _, err := gh.Issues.RemoveLabelForIssue(ctx, "org", "bundle", number, "new-one"); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.PR("org", "bundle", number); !slices.Equal(p.Labels, []string{"konflux-nudge"}) {
		t.Fatalf("labels after removal %v", p.Labels)
	}
}
