package github

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
)

// enterpriseVersion is the GitHub Enterprise Server version the emulator claims in
// X-GitHub-Enterprise-Version, as GHES sends on every API response: Renovate reads it
// from HEAD /api/v3/ to decide which GraphQL fields the server knows.
const enterpriseVersion = "3.15.0"

// apiRoot is GET (and HEAD) /api/v3/: GHES's root endpoint, which answers anyone.
func (s *Server) apiRoot(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"current_user_url": s.APIURL() + "user",
		"repository_url":   s.APIURL() + "repos/{owner}/{repo}",
	})
}

var gqlRepository = regexp.MustCompile(`\brepository\(owner:\s*\$(\w+),\s*name:\s*\$(\w+)\)`)

// graphqlRepository answers a query of repository(owner:, name:) — Renovate's
// repoInfoQuery — with the fields it selects that the emulator knows; it reports
// false for any other query. Callers hold s.mu.
func (s *Server) graphqlRepository(w http.ResponseWriter, token, query string, vars map[string]json.RawMessage) bool {
	m := gqlRepository.FindStringSubmatch(query)
	if m == nil {
		return false
	}
	var owner, name string
	_ = json.Unmarshal(vars[m[1]], &owner)
	_ = json.Unmarshal(vars[m[2]], &name)
	rp := s.repos[owner+"/"+name]
	if rp == nil || !s.scopeAllows(token, rp) {
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"repository": nil}, "errors": []map[string]any{{
			"type": "NOT_FOUND", "path": []string{"repository"},
			"message": "Could not resolve to a Repository with the name '" + owner + "/" + name + "'."}}})
		return true
	}
	all := map[string]any{
		"id": "R_" + strconv.FormatInt(rp.id, 10), "isFork": false, "parent": nil, "isArchived": false,
		"nameWithOwner": rp.owner + "/" + rp.name, "hasIssuesEnabled": true, "hasVulnerabilityAlertsEnabled": false,
		"autoMergeAllowed": false, "mergeCommitAllowed": true, "rebaseMergeAllowed": true, "squashMergeAllowed": true,
		"defaultBranchRef": map[string]any{"name": rp.DefaultBranch, "target": map[string]any{"oid": rp.Branches[rp.DefaultBranch]}},
		// The emulator has no issues: Renovate's issue queries see none.
		"issues": map[string]any{"nodes": []any{}, "pageInfo": map[string]any{"endCursor": nil, "hasNextPage": false}},
	}
	sel := map[string]any{}
	for k, v := range all {
		if regexp.MustCompile(`\b` + k + `\b`).MatchString(query) {
			sel[k] = v
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"repository": sel}})
	return true
}
