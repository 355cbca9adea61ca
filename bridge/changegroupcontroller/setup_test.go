package changegroupcontroller

import "testing"

// PRKey names the host: the same owner/repo#n on two forges is two PRs.
func TestPRKeyIncludesTheHost(t *testing.T) {
	for url, want := range map[string]string{
		"https://github.com/Org/Bundle/pull/7":                    "github.com/org/bundle#7",
		"https://ghe.example.com/org/bundle/pull/7":               "ghe.example.com/org/bundle#7",
		"http://127.0.0.1:8180/ns/bundle/pull/3":                  "127.0.0.1:8180/ns/bundle#3",
		"https://gitlab.com/group/sub/bundle/-/merge_requests/12": "gitlab.com/group/sub/bundle#12",
		"http://127.0.0.1:8182/ns/bundle/-/merge_requests/1":      "127.0.0.1:8182/ns/bundle#1",
		"https://codeberg.org/org/bundle/pulls/4":                 "codeberg.org/org/bundle#4",
		"https://github.com/org/bundle":                           "",
		"":                                                        "",
		"https://github.com/org/bundle/pull/7/files":              "",
	} {
		if got := PRKey(url); got != want {
			t.Errorf("PRKey(%q) = %q, want %q", url, got, want)
		}
	}
}
