package forgejo

import "testing"

// TestAutoMergeDeletesBranch is Renovate's version gate for Gitea-native automerge.
func TestAutoMergeDeletesBranch(t *testing.T) {
	for v, want := range map[string]bool{
		"1.26.0": true, "1.24.0": true, "1.24.0+dev-12-gabc": true, "1.23.9": false, "v1.25.1": true,
		"10.0.0+gitea-1.22.0": true, "9.1.0+gitea-1.21.11": false, "11.0.1-58-ab+gitea-1.22.0": true, "": false,
	} {
		if got := autoMergeDeletesBranch(v); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
}
