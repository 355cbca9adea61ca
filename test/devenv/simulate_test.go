package devenv

import "testing"

// TestParsePR reads the references `nudgeflow-dev dev merge` takes on every forge.
func TestParsePR(t *testing.T) {
	for in, want := range map[string]PRRef{
		"demo/operand-a#1":                                                     {Owner: "demo", Repo: "operand-a", Number: 1},
		"demo/operator-bundle-gitlab!3":                                        {Owner: "demo", Repo: "operator-bundle-gitlab", Number: 3},
		"http://127.0.0.1:8180/demo/operator-bundle/pull/2":                    {Base: "http://127.0.0.1:8180", Owner: "demo", Repo: "operator-bundle", Number: 2},
		"http://127.0.0.1:8182/demo/operator-bundle-gitlab/-/merge_requests/1": {Base: "http://127.0.0.1:8182", Owner: "demo", Repo: "operator-bundle-gitlab", Number: 1},
		"http://127.0.0.1:8182/group/sub/project/-/merge_requests/4":           {Base: "http://127.0.0.1:8182", Owner: "group/sub", Repo: "project", Number: 4},
		"http://127.0.0.1:8183/demo/operator-bundle-forgejo/pulls/5":           {Base: "http://127.0.0.1:8183", Owner: "demo", Repo: "operator-bundle-forgejo", Number: 5},
	} {
		got, err := ParsePR(in)
		if err != nil || got != want {
			t.Errorf("ParsePR(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "operand-a#1", "http://127.0.0.1:8180/demo/operator-bundle", "demo/x#y"} {
		if got, err := ParsePR(bad); err == nil {
			t.Errorf("ParsePR(%q) = %+v, want an error", bad, got)
		}
	}
}
