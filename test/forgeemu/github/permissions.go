package github

import (
	"net/http"
	"strings"
)

// repoPath is the owner and name of a REST path below /api/v3/repos/.
func repoPath(path string) (owner, name string, ok bool) {
	rest, ok := strings.CutPrefix(path, "/api/v3/repos/")
	if !ok {
		return "", "", false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// restPermissions are the installation-token permissions a REST request needs, any
// one of them ("name:level"), as GitHub's REST reference lists them per endpoint
// ("Fine-grained access tokens" of each operation). Issue comments and labels on a
// pull request take "Issues" or "Pull requests". An endpoint not listed needs none
// beyond the token itself.
func restPermissions(r *http.Request) []string {
	_, _, ok := repoPath(r.URL.Path)
	if !ok {
		return nil
	}
	rest := strings.TrimPrefix(r.URL.Path, "/api/v3/repos/")
	parts := strings.Split(rest, "/")
	level := "read"
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		level = "write"
	}
	if len(parts) == 2 {
		return []string{"metadata:read"}
	}
	switch sub := parts[2]; {
	case sub == "git":
		return []string{"contents:" + level}
	case sub == "pulls" && len(parts) >= 5 && parts[4] == "merge":
		return []string{"contents:write"}
	case sub == "pulls":
		return []string{"pull_requests:" + level}
	case sub == "issues" || sub == "labels":
		return []string{"issues:" + level, "pull_requests:" + level}
	case sub == "statuses":
		return []string{"statuses:write"}
	case sub == "commits" && len(parts) >= 5 && parts[4] == "status":
		return []string{"statuses:read"}
	case sub == "commits" && len(parts) >= 5 && parts[4] == "check-runs":
		return []string{"checks:read"}
	case sub == "contents" || sub == "commits" || sub == "compare" || sub == "branches":
		return []string{"contents:" + level}
	}
	return []string{"metadata:read"}
}
