package github

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nudgeflow/nudgeflow/test/forgeemu/emucore"
	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitstore"
)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	api := emucore.Route(mux, "/api/v3", s.authed)
	mux.HandleFunc("GET /api/v3/{$}", s.apiRoot)
	s.labelRoutes(api)
	api("GET /users/{login}", s.getUser)
	api("GET /user", s.getAuthenticatedUser)
	api("GET /repos/{owner}/{repo}", s.getRepo)
	api("GET /repos/{owner}/{repo}/git/ref/{ref...}", s.getRef)
	api("GET /repos/{owner}/{repo}/git/matching-refs/{ref...}", s.matchingRefs)
	api("POST /repos/{owner}/{repo}/git/refs", s.createRef)
	api("PATCH /repos/{owner}/{repo}/git/refs/{ref...}", s.updateRef)
	api("GET /repos/{owner}/{repo}/git/trees/{sha}", s.getTree)
	api("POST /repos/{owner}/{repo}/git/trees", s.createTree)
	api("GET /repos/{owner}/{repo}/git/blobs/{sha}", s.getBlob)
	api("POST /repos/{owner}/{repo}/git/blobs", s.createBlob)
	api("GET /repos/{owner}/{repo}/git/commits/{sha}", s.getCommit)
	api("POST /repos/{owner}/{repo}/git/commits", s.createCommit)
	api("GET /repos/{owner}/{repo}/pulls", s.listPulls)
	api("POST /repos/{owner}/{repo}/pulls", s.createPull)
	api("GET /repos/{owner}/{repo}/pulls/{number}", s.getPull)
	api("PATCH /repos/{owner}/{repo}/pulls/{number}", s.editPull)
	api("GET /repos/{owner}/{repo}/pulls/{number}/files", s.listPullFiles)
	api("PUT /repos/{owner}/{repo}/pulls/{number}/merge", s.mergePull)
	api("GET /repos/{owner}/{repo}/issues/{number}/comments", s.listComments)
	api("POST /repos/{owner}/{repo}/issues/{number}/comments", s.createComment)
	api("POST /repos/{owner}/{repo}/statuses/{sha}", s.createStatus)
	api("GET /repos/{owner}/{repo}/commits/{ref}/status", s.combinedStatus)
	api("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", s.listCheckRuns)
	mux.HandleFunc("POST /api/graphql", s.authed(s.graphql))
	s.appRoutes(mux)
	s.webRoutes(mux)
	s.gitRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { writeError(w, http.StatusNotFound, "Not Found") })
	return mux
}

// authed checks the token, counts writes and applies FailNext, then calls h under s.mu.
func (s *Server) authed(h func(w http.ResponseWriter, r *http.Request, u User)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git/commits") {
			s.beforeCommit.Fire()
		}
		if r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/git/refs/") {
			s.beforeBranchMove.Fire()
		}
		if r.Method == http.MethodPost && r.URL.Path == "/api/graphql" && r.Body != nil {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				writeError(w, http.StatusBadRequest, "Problems parsing JSON")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if gqlUpdateRefs.Match(body) {
				s.beforeBranchMove.Fire()
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		token := bearer(r)
		u, ok := s.tokens.Lookup(token)
		if !ok || s.tokenExpired(token) {
			writeError(w, http.StatusUnauthorized, "Bad credentials")
			return
		}
		// An installation token: a repository outside its scope is not found, a
		// request its permissions do not cover is forbidden (GraphQL answers its
		// own way, in graphql).
		if owner, name, ok := repoPath(r.URL.Path); ok {
			if rp := s.repos[owner+"/"+name]; rp != nil && !s.scopeAllows(token, rp) {
				writeError(w, http.StatusNotFound, "Not Found")
				return
			}
		}
		if !s.permits(token, restPermissions(r)...) {
			forbidden(w)
			return
		}
		write := emucore.IsWrite(r)
		if write {
			s.writeScopes = append(s.writeScopes, s.scopeNames(bearer(r)))
		}
		if f, failed := s.faults.Admit(write, r.URL.Path); failed {
			writeFailure(w, f)
			return
		}
		h(w, r, u)
	}
}

// scopeNames names the repositories a token is limited to. Callers hold s.mu.
func (s *Server) scopeNames(token string) string {
	t := s.installToken(token)
	if t == nil {
		return ""
	}
	var names []string
	for _, id := range t.repos {
		for _, rp := range s.repos {
			if rp.id == id {
				names = append(names, rp.owner+"/"+rp.name)
			}
		}
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

func bearer(r *http.Request) string {
	a := r.Header.Get("Authorization")
	for _, p := range []string{"Bearer ", "bearer ", "token "} {
		if t, ok := strings.CutPrefix(a, p); ok {
			return t
		}
	}
	if _, pw, ok := r.BasicAuth(); ok {
		return pw
	}
	return ""
}

func writeFailure(w http.ResponseWriter, f emucore.Failure) {
	reset := time.Now().Add(time.Duration(f.RetryAfter) * time.Second).Unix()
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(f.RetryAfter))
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset, 10))
	h.Set("X-RateLimit-Resource", "core")
	switch f.Status {
	case http.StatusTooManyRequests:
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Used", "5000")
		writeJSON(w, f.Status, map[string]any{"message": "API rate limit exceeded",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"})
	case http.StatusForbidden:
		h.Set("X-RateLimit-Remaining", "4000")
		writeJSON(w, f.Status, map[string]any{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
			"documentation_url": "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits"})
	default:
		writeError(w, f.Status, http.StatusText(f.Status))
	}
}

func (s *Server) repoOf(w http.ResponseWriter, r *http.Request) *repo {
	rp := s.repos[r.PathValue("owner")+"/"+r.PathValue("repo")]
	if rp == nil || !s.scopeAllows(bearer(r), rp) {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil
	}
	return rp
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 10<<20)).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return false
	}
	return true
}

func unprocessable(w http.ResponseWriter, msg string, errs ...map[string]any) {
	writeError(w, http.StatusUnprocessableEntity, msg, errs...)
}

func (s *Server) getRepo(w http.ResponseWriter, r *http.Request, _ User) {
	if rp := s.repoOf(w, r); rp != nil {
		writeJSON(w, http.StatusOK, s.repoJSON(rp))
	}
}

func (s *Server) refJSON(rp *repo, ref, sha string) map[string]any {
	return map[string]any{"ref": "refs/" + ref, "node_id": "REF_" + ref,
		"url":    s.APIURL() + "repos/" + rp.owner + "/" + rp.name + "/git/refs/" + ref,
		"object": map[string]any{"type": "commit", "sha": sha}}
}

func (s *Server) getRef(w http.ResponseWriter, r *http.Request, _ User) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return
	}
	ref := r.PathValue("ref")
	sha, ok := rp.ref(ref)
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.refJSON(rp, ref, sha))
}

// matchingRefs lists the refs whose name starts with the given one ("heads/feat"
// matches heads/feature), sorted, as GitHub does: 200 with [] when none does.
func (s *Server) matchingRefs(w http.ResponseWriter, r *http.Request, _ User) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return
	}
	prefix := r.PathValue("ref")
	names := map[string]string{}
	for br, sha := range rp.Branches {
		names["heads/"+br] = sha
	}
	for ref, sha := range rp.otherRefs {
		names[ref] = sha
	}
	out := []map[string]any{}
	for _, ref := range slices.Sorted(maps.Keys(names)) {
		if strings.HasPrefix(ref, prefix) {
			out = append(out, s.refJSON(rp, ref, names[ref]))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createRef(w http.ResponseWriter, r *http.Request, u User) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return
	}
	var in struct{ Ref, SHA string }
	if !decode(w, r, &in) {
		return
	}
	ref, ok := strings.CutPrefix(in.Ref, "refs/")
	if !ok || strings.Count(in.Ref, "/") < 2 {
		unprocessable(w, "Reference name is invalid")
		return
	}
	if rp.Commits[in.SHA] == nil {
		unprocessable(w, "Object does not exist")
		return
	}
	if _, exists := rp.ref(ref); exists {
		unprocessable(w, "Reference already exists")
		return
	}
	rp.setRef(ref, in.SHA)
	if branch, ok := strings.CutPrefix(ref, "heads/"); ok {
		s.pushEvent(rp, branch, "", in.SHA, u.Login)
	}
	writeJSON(w, http.StatusCreated, s.refJSON(rp, ref, in.SHA))
}

func (s *Server) updateRef(w http.ResponseWriter, r *http.Request, u User) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return
	}
	var in struct {
		SHA   string
		Force bool
	}
	if !decode(w, r, &in) {
		return
	}
	ref := r.PathValue("ref")
	old, exists := rp.ref(ref)
	if !exists {
		unprocessable(w, "Reference does not exist")
		return
	}
	if rp.Commits[in.SHA] == nil {
		unprocessable(w, "Object does not exist")
		return
	}
	if !in.Force && !rp.IsAncestor(old, in.SHA) {
		unprocessable(w, "Update is not a fast forward")
		return
	}
	if branch, ok := strings.CutPrefix(ref, "heads/"); ok {
		s.moveBranch(rp, branch, in.SHA, u.Login)
	} else {
		rp.setRef(ref, in.SHA)
	}
	writeJSON(w, http.StatusOK, s.refJSON(rp, ref, in.SHA))
}

func (s *Server) getTree(w http.ResponseWriter, r *http.Request, _ User) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return
	}
	sha := r.PathValue("sha")
	entries, ok := rp.Trees[sha]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	recursive := r.URL.Query().Get("recursive") != ""
	var out []map[string]any
	dirs := map[string]bool{}
	for _, e := range entries {
		parts := strings.Split(e.Path, "/")
		for i := 1; i < len(parts); i++ {
			dir := strings.Join(parts[:i], "/")
			if dirs[dir] || (!recursive && i > 1) {
				continue
			}
			dirs[dir] = true
			out = append(out, map[string]any{"path": dir, "mode": "040000", "type": "tree", "sha": gitstore.SubtreeSHA(entries, dir)})
		}
		if recursive || len(parts) == 1 {
			out = append(out, map[string]any{"path": e.Path, "mode": e.Mode, "type": "blob", "sha": e.SHA, "size": len(rp.Blobs[e.SHA])})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sha": sha, "tree": out, "truncated": false})
}

func (s *Server) createTree(w http.ResponseWriter, r *http.Request, _ User) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return
	}
	var in struct {
		BaseTree string `json:"base_tree"`
		Tree     []struct {
			Path    string  `json:"path"`
			Mode    string  `json:"mode"`
			Type    string  `json:"type"`
			SHA     *string `json:"sha"`
			Content *string `json:"content"`
		} `json:"tree"`
	}
	if !decode(w, r, &in) {
		return
	}
	if _, ok := rp.Trees[in.BaseTree]; in.BaseTree != "" && !ok {
		unprocessable(w, "Invalid tree info", map[string]any{"resource": "Tree", "field": "base_tree", "code": "invalid"})
		return
	}
	var edits []gitstore.Edit
	for _, t := range in.Tree {
		if t.Path == "" || strings.HasPrefix(t.Path, "/") || (t.Type != "" && t.Type != "blob" && t.Type != "tree") {
			unprocessable(w, "Invalid tree info", map[string]any{"resource": "Tree", "field": "path", "code": "invalid"})
			return
		}
		if t.Type == "tree" {
			// A directory by its tree's SHA (Renovate's platform-native commit names
			// the root's entries as `git ls-tree` lists them): it replaces what the
			// base tree has below that path.
			sub, ok := rp.Trees[deref(t.SHA)]
			if !ok || t.Content != nil {
				unprocessable(w, "Invalid tree info", map[string]any{"resource": "Tree", "field": "sha", "code": "invalid"})
				return
			}
			for _, e := range rp.Trees[in.BaseTree] {
				if strings.HasPrefix(e.Path, t.Path+"/") {
					edits = append(edits, gitstore.Edit{Path: e.Path, Delete: true})
				}
			}
			for _, e := range sub {
				edits = append(edits, gitstore.Edit{Path: t.Path + "/" + e.Path, Mode: e.Mode, SHA: e.SHA})
			}
			continue
		}
		mode := t.Mode
		if mode == "" {
			mode = "100644"
		}
		switch {
		case t.Content != nil:
			edits = append(edits, gitstore.Edit{Path: t.Path, Mode: mode, SHA: rp.PutBlob([]byte(*t.Content))})
		case t.SHA != nil:
			if _, ok := rp.Blobs[*t.SHA]; !ok {
				unprocessable(w, "Invalid tree info", map[string]any{"resource": "Tree", "field": "sha", "code": "invalid"})
				return
			}
			edits = append(edits, gitstore.Edit{Path: t.Path, Mode: mode, SHA: *t.SHA})
		default: // GitHub deletes a path given neither sha nor content
			edits = append(edits, gitstore.Edit{Path: t.Path, Delete: true})
		}
	}
	sha := rp.EditTree(in.BaseTree, edits)
	var out []map[string]any
	for _, e := range rp.Trees[sha] {
		out = append(out, map[string]any{"path": e.Path, "mode": e.Mode, "type": "blob", "sha": e.SHA})
	}
	writeJSON(w, http.StatusCreated, map[string]any{"sha": sha, "tree": out})
}

func (s *Server) getBlob(w http.ResponseWriter, r *http.Request, _ User) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return
	}
	sha := r.PathValue("sha")
	b, ok := rp.Blobs[sha]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	s.blobReads.Inc()
	if strings.Contains(r.Header.Get("Accept"), ".raw") {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(b)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sha": sha, "size": len(b), "encoding": "base64",
		"content": base64.StdEncoding.EncodeToString(b)})
}

func (s *Server) createBlob(w http.ResponseWriter, r *http.Request, _ User) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return
	}
	var in struct{ Content, Encoding string }
	if !decode(w, r, &in) {
		return
	}
	b := []byte(in.Content)
	if in.Encoding == "base64" {
		var err error
		if b, err = base64.StdEncoding.DecodeString(in.Content); err != nil {
			unprocessable(w, "content is not valid Base64")
			return
		}
	} else if !utf8.Valid(b) {
		unprocessable(w, "content is not valid UTF-8")
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"sha": rp.PutBlob(b)})
}

func (s *Server) commitJSON(rp *repo, c *gitstore.Commit) map[string]any {
	parents := []map[string]any{}
	for _, p := range c.Parents {
		parents = append(parents, map[string]any{"sha": p})
	}
	return map[string]any{"sha": c.SHA, "node_id": "C_" + c.SHA, "message": c.Message,
		"tree": map[string]any{"sha": c.Tree}, "parents": parents, "author": c.Author, "committer": c.Committer,
		"html_url": fmt.Sprintf("%s/%s/%s/commit/%s", s.URL(), rp.owner, rp.name, c.SHA)}
}

func (s *Server) getCommit(w http.ResponseWriter, r *http.Request, _ User) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return
	}
	c := rp.Commits[r.PathValue("sha")]
	if c == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.commitJSON(rp, c))
}

func (s *Server) createCommit(w http.ResponseWriter, r *http.Request, u User) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return
	}
	var in struct {
		Message   string              `json:"message"`
		Tree      string              `json:"tree"`
		Parents   []string            `json:"parents"`
		Author    *gitstore.Signature `json:"author"`
		Committer *gitstore.Signature `json:"committer"`
	}
	if !decode(w, r, &in) {
		return
	}
	if _, ok := rp.Trees[in.Tree]; !ok {
		unprocessable(w, "Tree SHA does not exist")
		return
	}
	for _, p := range in.Parents {
		if rp.Commits[p] == nil {
			unprocessable(w, "Parent SHA does not exist or is not a commit object")
			return
		}
	}
	author := s.CommitIdentity(u)
	if in.Author != nil {
		author = *in.Author
	}
	committer := author
	if in.Committer != nil {
		committer = *in.Committer
	}
	c := rp.NewCommit(&s.clock, in.Tree, in.Parents, in.Message, author, committer)
	writeJSON(w, http.StatusCreated, s.commitJSON(rp, c))
}

func (s *Server) pullOf(w http.ResponseWriter, r *http.Request) (*repo, *pull) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return nil, nil
	}
	n, err := strconv.Atoi(r.PathValue("number"))
	if err != nil || n < 1 || n > len(rp.pulls) || rp.pulls[n-1] == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil, nil
	}
	return rp, rp.pulls[n-1]
}

func (s *Server) listPulls(w http.ResponseWriter, r *http.Request, _ User) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return
	}
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	head := q.Get("head")
	out := []map[string]any{}
	for i := len(rp.pulls) - 1; i >= 0; i-- { // newest first, like sort=created desc
		p := rp.pulls[i]
		if p == nil || (state != "all" && p.State != state) {
			continue
		}
		if head != "" && head != rp.owner+":"+p.Head {
			continue
		}
		if base := q.Get("base"); base != "" && base != p.Base {
			continue
		}
		out = append(out, s.pullJSON(rp, p))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createPull(w http.ResponseWriter, r *http.Request, u User) {
	rp := s.repoOf(w, r)
	if rp == nil {
		return
	}
	var in struct {
		Title, Head, Base, Body string
		Draft                   bool
	}
	if !decode(w, r, &in) {
		return
	}
	head := in.Head
	if o, b, ok := strings.Cut(in.Head, ":"); ok {
		if o != rp.owner {
			unprocessable(w, "Validation Failed", map[string]any{"resource": "PullRequest", "field": "head", "code": "invalid"})
			return
		}
		head = b
	}
	headSHA, okHead := rp.Branches[head]
	baseSHA, okBase := rp.Branches[in.Base]
	switch {
	case in.Title == "":
		unprocessable(w, "Validation Failed", map[string]any{"resource": "PullRequest", "field": "title", "code": "missing_field"})
		return
	case !okHead:
		unprocessable(w, "Validation Failed", map[string]any{"resource": "PullRequest", "field": "head", "code": "invalid"})
		return
	case !okBase:
		unprocessable(w, "Validation Failed", map[string]any{"resource": "PullRequest", "field": "base", "code": "invalid"})
		return
	case headSHA == baseSHA || rp.IsAncestor(headSHA, baseSHA):
		unprocessable(w, "Validation Failed", map[string]any{"resource": "PullRequest", "code": "custom",
			"message": fmt.Sprintf("No commits between %s and %s", in.Base, head)})
		return
	}
	if in.Draft && s.noDrafts[rp.owner+"/"+rp.name] {
		unprocessable(w, "Validation Failed", map[string]any{"resource": "PullRequest", "code": "custom",
			"message": "Draft pull requests are not supported in this repository."})
		return
	}
	for _, p := range rp.pulls {
		if p != nil && p.State == "open" && p.Head == head && p.Base == in.Base {
			unprocessable(w, "Validation Failed", map[string]any{"resource": "PullRequest", "code": "custom",
				"message": fmt.Sprintf("A pull request already exists for %s:%s.", rp.owner, head)})
			return
		}
	}
	rp.nextNumber++
	p := &pull{Number: rp.nextNumber, Title: in.Title, Body: in.Body, State: "open", Draft: in.Draft, Head: head,
		Base: in.Base, HeadSHA: headSHA, Author: u.Login, CreatedAt: time.Unix(1700000000+s.clock, 0).UTC()}
	p.NodeID = base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "PR:%s/%s#%d", rp.owner, rp.name, p.Number))
	for len(rp.pulls) < p.Number {
		rp.pulls = append(rp.pulls, nil)
	}
	rp.pulls[p.Number-1] = p
	s.event(rp, p, "opened", u.Login)
	writeJSON(w, http.StatusCreated, s.pullJSON(rp, p))
}

func (s *Server) getPull(w http.ResponseWriter, r *http.Request, _ User) {
	if rp, p := s.pullOf(w, r); p != nil {
		writeJSON(w, http.StatusOK, s.pullJSON(rp, p))
	}
}

// editPull changes title, body, state or base; like GitHub it ignores draft.
func (s *Server) editPull(w http.ResponseWriter, r *http.Request, u User) {
	rp, p := s.pullOf(w, r)
	if p == nil {
		return
	}
	var in struct {
		Title, Body, State, Base *string
	}
	if !decode(w, r, &in) {
		return
	}
	if in.State != nil && *in.State != "open" && *in.State != "closed" {
		unprocessable(w, "Validation Failed", map[string]any{"resource": "PullRequest", "field": "state", "code": "invalid"})
		return
	}
	if p.Merged && in.State != nil && *in.State == "open" {
		unprocessable(w, "Validation Failed", map[string]any{"resource": "PullRequest", "code": "custom", "message": "state cannot be changed. The pull request has been merged."})
		return
	}
	edited := false
	if in.Title != nil && *in.Title != p.Title {
		p.Title, edited = *in.Title, true
	}
	if in.Body != nil && *in.Body != p.Body {
		p.Body, edited = *in.Body, true
	}
	if in.Base != nil && *in.Base != p.Base {
		if _, ok := rp.Branches[*in.Base]; !ok {
			unprocessable(w, "Validation Failed", map[string]any{"resource": "PullRequest", "field": "base", "code": "invalid"})
			return
		}
		p.Base, edited = *in.Base, true
	}
	if edited {
		s.event(rp, p, "edited", u.Login)
	}
	if in.State != nil && *in.State != p.State {
		p.State = *in.State
		if p.State == "closed" {
			s.event(rp, p, "closed", u.Login)
		} else {
			p.HeadSHA = rp.Branches[p.Head]
			s.event(rp, p, "reopened", u.Login)
		}
	}
	writeJSON(w, http.StatusOK, s.pullJSON(rp, p))
}

func (s *Server) commentJSON(rp *repo, n int, c *comment) map[string]any {
	return map[string]any{"id": c.ID, "node_id": "IC_" + strconv.FormatInt(c.ID, 10), "body": c.Body,
		"user":     map[string]any{"login": c.User},
		"html_url": fmt.Sprintf("%s/%s/%s/pull/%d#issuecomment-%d", s.URL(), rp.owner, rp.name, n, c.ID)}
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request, _ User) {
	rp, p := s.pullOf(w, r)
	if p == nil {
		return
	}
	all := rp.comments[p.Number]
	from, to := s.page(w, r, len(all))
	out := []map[string]any{}
	for _, c := range all[from:to] {
		out = append(out, s.commentJSON(rp, p.Number, c))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createComment(w http.ResponseWriter, r *http.Request, u User) {
	rp, p := s.pullOf(w, r)
	if p == nil {
		return
	}
	var in struct{ Body string }
	if !decode(w, r, &in) {
		return
	}
	if in.Body == "" {
		unprocessable(w, "Validation Failed", map[string]any{"resource": "IssueComment", "field": "body", "code": "missing_field"})
		return
	}
	c := s.addComment(rp, p, u.Login, in.Body)
	writeJSON(w, http.StatusCreated, s.commentJSON(rp, p.Number, c))
}

// graphql answers the pull request mutations nudgeflow uses —
// markPullRequestReadyForReview, convertPullRequestToDraft and updatePullRequest
// (body) — in one document or several, running a document's top-level fields in
// order as GraphQL does for mutations; a field that fails leaves the others' data.
func (s *Server) graphql(w http.ResponseWriter, r *http.Request, u User) {
	var in struct {
		Query     string                     `json:"query"`
		Variables map[string]json.RawMessage `json:"variables"`
	}
	if !decode(w, r, &in) {
		return
	}
	if len(s.gqlFaults) > 0 {
		fault := s.gqlFaults[0]
		s.gqlFaults = s.gqlFaults[1:]
		switch fault {
		case GraphQLSecondaryLimit:
			w.Header().Set("X-RateLimit-Limit", "5000")
			w.Header().Set("X-RateLimit-Remaining", "4999")
			w.Header().Set("X-RateLimit-Resource", "graphql")
			writeJSON(w, http.StatusForbidden, map[string]any{
				"message":           "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 1234:5678.",
				"documentation_url": "https://docs.github.com/graphql/overview/rate-limits-and-node-limits-for-the-graphql-api#secondary-rate-limits"})
		case GraphQLTransient:
			writeJSON(w, http.StatusOK, map[string]any{"data": nil, "errors": []map[string]any{{
				"message": "Something went wrong while executing your query. This may be the result of a timeout, or it could be a GitHub bug. Please include `1234:5678` when reporting this issue."}}})
		}
		return
	}
	if s.gqlRateLimited > 0 {
		s.gqlRateLimited--
		writeJSON(w, http.StatusOK, map[string]any{"data": nil, "errors": []map[string]any{{
			"type": "RATE_LIMITED", "message": "API rate limit already exceeded for user ID 1."}}})
		return
	}
	token := bearer(r)
	if s.graphqlViewer(w, in.Query, u) {
		return
	}
	if s.graphqlRepository(w, token, in.Query, in.Variables) {
		return
	}
	if m := gqlUpdateRefs.FindStringSubmatch(in.Query); m != nil {
		s.updateRefs(w, token, in.Variables[m[1]], u)
		return
	}
	fields := gqlField.FindAllStringSubmatchIndex(in.Query, -1)
	if len(fields) == 0 {
		writeJSON(w, http.StatusOK, map[string]any{"errors": []map[string]any{{"message": "emulator: unsupported operation"}}})
		return
	}
	data := map[string]any{}
	var errs []map[string]any
	for k, m := range fields {
		field, variable := in.Query[m[2]:m[3]], in.Query[m[4]:m[5]]
		// The selection of this field runs to the next field (or the end).
		end := len(in.Query)
		if k+1 < len(fields) {
			end = fields[k+1][0]
		}
		selection := in.Query[m[1]:end]
		var input struct {
			PullRequestID string  `json:"pullRequestId"`
			Body          *string `json:"body"`
		}
		if err := json.Unmarshal(in.Variables[variable], &input); err != nil || input.PullRequestID == "" {
			errs = append(errs, map[string]any{"type": "INVALID", "path": []string{field}, "message": "emulator: variable $" + variable + " has no pullRequestId"})
			data[field] = nil
			continue
		}
		rp, p := s.pullByNodeID(input.PullRequestID)
		switch {
		case p != nil && !s.scopeAllows(token, rp):
			p = nil // a token sees no node of a repository outside its scope
		case p != nil && !s.permits(token, "pull_requests:write"):
			errs = append(errs, gqlForbidden(field))
			data[field] = nil
			continue
		}
		switch {
		case p == nil:
			errs = append(errs, map[string]any{"type": "NOT_FOUND", "path": []string{field},
				"message": fmt.Sprintf("Could not resolve to a node with the global id of '%s'", input.PullRequestID)})
			data[field] = nil
			continue
		case p.State != "open":
			errs = append(errs, map[string]any{"type": "UNPROCESSABLE", "path": []string{field}, "message": "Pull request is closed"})
			data[field] = nil
			continue
		}
		switch field {
		case "markPullRequestReadyForReview":
			s.setDraft(rp, p, false, u.Login)
		case "convertPullRequestToDraft":
			s.setDraft(rp, p, true, u.Login)
		case "updatePullRequest":
			if input.Body != nil && *input.Body != p.Body {
				p.Body = *input.Body
				s.event(rp, p, "edited", u.Login)
			}
		}
		// Like GitHub, answer only the fields the query selects.
		sel := map[string]any{}
		for name, v := range map[string]any{"id": p.NodeID, "number": p.Number, "isDraft": p.Draft} {
			if regexp.MustCompile(`\b` + name + `\b`).MatchString(selection) {
				sel[name] = v
			}
		}
		data[field] = map[string]any{"pullRequest": sel}
	}
	out := map[string]any{"data": data}
	if len(errs) > 0 {
		out["errors"] = errs
	}
	writeJSON(w, http.StatusOK, out)
}

var gqlUpdateRefs = regexp.MustCompile(`\bupdateRefs\(input:\s*\$(\w+)\)`)

// updateRefs is GitHub's GraphQL updateRefs: every RefUpdate's beforeOid must be
// the ref's current value (40 zeros: the ref must not exist) or nothing changes;
// afterOid is the new value (40 zeros deletes); without force only fast-forwards
// are taken. All or nothing, under the server's lock: a compare-and-swap.
func (s *Server) updateRefs(w http.ResponseWriter, token string, raw json.RawMessage, u User) {
	const zero = "0000000000000000000000000000000000000000"
	var input struct {
		RepositoryID string `json:"repositoryId"`
		RefUpdates   []struct {
			Name      string `json:"name"`
			BeforeOid string `json:"beforeOid"`
			AfterOid  string `json:"afterOid"`
			Force     bool   `json:"force"`
		} `json:"refUpdates"`
	}
	fail := func(typ, msg string) {
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"updateRefs": nil},
			"errors": []map[string]any{{"type": typ, "path": []string{"updateRefs"}, "message": msg}}})
	}
	if err := json.Unmarshal(raw, &input); err != nil || input.RepositoryID == "" || len(input.RefUpdates) == 0 {
		fail("INVALID", "emulator: updateRefs needs repositoryId and refUpdates")
		return
	}
	var rp *repo
	for _, r := range s.repos {
		if "R_"+strconv.FormatInt(r.id, 10) == input.RepositoryID {
			rp = r
		}
	}
	if rp == nil || !s.scopeAllows(token, rp) {
		fail("NOT_FOUND", fmt.Sprintf("Could not resolve to a node with the global id of '%s'", input.RepositoryID))
		return
	}
	if !s.permits(token, "contents:write") {
		fail("FORBIDDEN", "Resource not accessible by integration")
		return
	}
	for _, ru := range input.RefUpdates {
		ref, ok := strings.CutPrefix(ru.Name, "refs/")
		if !ok {
			fail("UNPROCESSABLE", "Reference name is invalid: "+ru.Name)
			return
		}
		cur, exists := rp.ref(ref)
		switch {
		case ru.BeforeOid == zero && exists, ru.BeforeOid != zero && cur != ru.BeforeOid:
			fail("STALE_DATA", fmt.Sprintf("Expected %s to point to %s, but it did not", ru.Name, ru.BeforeOid))
			return
		case ru.AfterOid != zero && rp.Commits[ru.AfterOid] == nil:
			fail("UNPROCESSABLE", "Object does not exist: "+ru.AfterOid)
			return
		case exists && ru.AfterOid != zero && !ru.Force && !rp.IsAncestor(cur, ru.AfterOid):
			fail("UNPROCESSABLE", "Update is not a fast forward: "+ru.Name)
			return
		}
	}
	for _, ru := range input.RefUpdates {
		ref := strings.TrimPrefix(ru.Name, "refs/")
		if ru.AfterOid == zero {
			if branch, ok := strings.CutPrefix(ref, "heads/"); ok {
				s.pushEvent(rp, branch, rp.Branches[branch], "", u.Login)
				delete(rp.Branches, branch)
			} else {
				delete(rp.otherRefs, ref)
			}
			continue
		}
		if branch, ok := strings.CutPrefix(ref, "heads/"); ok {
			s.moveBranch(rp, branch, ru.AfterOid, u.Login)
		} else {
			rp.setRef(ref, ru.AfterOid)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"updateRefs": map[string]any{"clientMutationId": nil}}})
}

// gqlForbidden is GitHub's GraphQL error for a field the token's permissions do
// not cover.
func gqlForbidden(field string) map[string]any {
	return map[string]any{"type": "FORBIDDEN", "path": []string{field}, "message": "Resource not accessible by integration"}
}

var gqlField = regexp.MustCompile(`\b(markPullRequestReadyForReview|convertPullRequestToDraft|updatePullRequest)\(input:\s*\$(\w+)\)`)

func (s *Server) pullByNodeID(id string) (*repo, *pull) {
	for _, rp := range s.repos {
		for _, p := range rp.pulls {
			if p != nil && p.NodeID == id {
				return rp, p
			}
		}
	}
	return nil, nil
}

// page is GitHub's pagination of n items: per_page (default 30, at most 100) and
// page; it sets the Link header to the next page and returns the page's bounds.
func (s *Server) page(w http.ResponseWriter, r *http.Request, n int) (from, to int) {
	perPage, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if perPage <= 0 || perPage > 100 {
		perPage = 30
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	if page < 1 {
		page = 1
	}
	if page*perPage < n {
		next := *r.URL
		q := next.Query()
		q.Set("page", strconv.Itoa(page+1))
		q.Set("per_page", strconv.Itoa(perPage))
		next.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, s.URL(), next.RequestURI()))
	}
	return min((page-1)*perPage, n), min(page*perPage, n)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
