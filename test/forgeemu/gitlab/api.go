package gitlab

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
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
	api := emucore.Route(mux, "/api/v4", s.authed)
	api("GET /user", s.getUser)
	api("GET /version", s.getVersion)
	api("GET /projects/{id}/labels", s.listLabels)
	api("POST /projects/{id}/labels", s.createLabel)
	api("GET /projects/{id}/issues", s.listIssues)
	api("POST /projects/{id}/issues", s.createIssue)
	api("GET /projects/{id}/issues/{iid}", s.getIssue)
	api("PUT /projects/{id}/issues/{iid}", s.updateIssue)
	api("GET /projects/{id}", s.getProject)
	api("GET /projects/{id}/repository/branches/{branch}", s.getBranch)
	api("GET /projects/{id}/repository/commits/{sha}", s.getCommit)
	api("POST /projects/{id}/repository/commits", s.createCommit)
	api("GET /projects/{id}/repository/tree", s.getTree)
	api("GET /projects/{id}/repository/blobs/{sha}/raw", s.getRawBlob)
	api("GET /projects/{id}/merge_requests", s.listMRs)
	api("POST /projects/{id}/merge_requests", s.createMR)
	api("GET /projects/{id}/merge_requests/{iid}", s.getMR)
	api("PUT /projects/{id}/merge_requests/{iid}", s.updateMR)
	api("GET /projects/{id}/merge_requests/{iid}/diffs", s.listMRDiffs)
	api("PUT /projects/{id}/merge_requests/{iid}/merge", s.mergeMR)
	api("POST /projects/{id}/merge_requests/{iid}/approve", s.approveMR)
	api("GET /projects/{id}/merge_requests/{iid}/approval_rules", s.listApprovalRules)
	api("POST /projects/{id}/merge_requests/{iid}/approval_rules", s.createApprovalRule)
	api("PUT /projects/{id}/merge_requests/{iid}/approval_rules/{rule}", s.updateApprovalRule)
	api("DELETE /projects/{id}/merge_requests/{iid}/approval_rules/{rule}", s.deleteApprovalRule)
	api("GET /projects/{id}/merge_requests/{iid}/notes", s.listNotes)
	api("POST /projects/{id}/merge_requests/{iid}/notes", s.createNote)
	api("PUT /projects/{id}/merge_requests/{iid}/notes/{note}", s.updateNote)
	api("DELETE /projects/{id}/merge_requests/{iid}/notes/{note}", s.deleteNote)
	api("POST /projects/{id}/statuses/{sha}", s.createStatus)
	api("GET /projects/{id}/repository/commits/{sha}/statuses", s.listStatuses)
	api("GET /projects/{id}/pipelines", s.listPipelines)
	mux.HandleFunc("/api/v4/", func(w http.ResponseWriter, r *http.Request) { writeMessage(w, http.StatusNotFound, "404 Not Found") })
	s.webRoutes(mux)
	return mux
}

// authed checks the token (PRIVATE-TOKEN or Authorization: Bearer), counts writes,
// applies the injected failures, then calls h under s.mu.
func (s *Server) authed(h func(w http.ResponseWriter, r *http.Request, u User)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/repository/commits") {
			s.beforeCommit.Fire()
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		u, ok := s.tokens.Lookup(token(r))
		if !ok {
			writeMessage(w, http.StatusUnauthorized, "401 Unauthorized")
			return
		}
		write := emucore.IsWrite(r)
		// The scope holds the URL-encoded project path: match it escaped.
		if f, failed := s.faults.Admit(write, r.URL.EscapedPath()); failed {
			s.writeFailure(w, f)
			return
		}
		if write && u.ReadOnly {
			writeMessage(w, http.StatusForbidden, "403 Forbidden")
			return
		}
		h(w, r, u)
	}
}

func token(r *http.Request) string {
	if t := r.Header.Get("PRIVATE-TOKEN"); t != "" {
		return t
	}
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return t
	}
	if _, pw, ok := r.BasicAuth(); ok {
		return pw
	}
	return ""
}

// writeFailure answers as GitLab's rack-attack throttle does: 429 "Retry later"
// with RateLimit-* and Retry-After.
func (s *Server) writeFailure(w http.ResponseWriter, f emucore.Failure) {
	if f.Status != http.StatusTooManyRequests {
		if f.RetryAfter > 0 {
			// GitLab itself throttles with 429 only; a proxy in front of it may
			// answer another status with Retry-After.
			w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
		}
		writeMessage(w, f.Status, fmt.Sprintf("%d %s", f.Status, http.StatusText(f.Status)))
		return
	}
	reset := time.Now().Add(time.Duration(f.RetryAfter) * time.Second)
	h := w.Header()
	h.Set("RateLimit-Name", "throttle_authenticated_api")
	h.Set("RateLimit-Limit", "2000")
	h.Set("RateLimit-Observed", "2001")
	h.Set("RateLimit-Remaining", "0")
	h.Set("RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("RateLimit-ResetTime", reset.UTC().Format(http.TimeFormat))
	h.Set("Retry-After", strconv.Itoa(f.RetryAfter))
	h.Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write([]byte("Retry later\n"))
}

// projectOf finds the project by numeric ID or path (the mux unescapes %2F).
func (s *Server) projectOf(w http.ResponseWriter, r *http.Request) *project {
	id := r.PathValue("id")
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		for _, p := range s.projects {
			if p.ID == n {
				return p
			}
		}
	} else if p := s.projects[strings.ToLower(id)]; p != nil {
		return p
	}
	notFound(w, "Project")
	return nil
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 10<<20)).Decode(v); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "the request body is not valid JSON"})
		return false
	}
	return true
}

func badRequest(w http.ResponseWriter, msg string) { writeMessage(w, http.StatusBadRequest, msg) }

func (s *Server) getUser(w http.ResponseWriter, _ *http.Request, u User) {
	writeJSON(w, http.StatusOK, map[string]any{"id": 1, "username": u.Username, "name": u.Name, "email": u.Email,
		"commit_email": u.commitSig().Email, "state": "active", "bot": strings.Contains(u.Username, "bot")})
}

// Version is what GET /version reports: Renovate reads it to pick the draft prefix
// ("Draft: " since 13.2) and the description limit (1,000,000 since 13.4).
const Version = "17.6.0-ee"

func (s *Server) getVersion(w http.ResponseWriter, _ *http.Request, _ User) {
	writeJSON(w, http.StatusOK, map[string]any{"version": Version, "revision": "emulator", "enterprise": true,
		"kas": map[string]any{"enabled": false, "externalUrl": nil, "version": nil}})
}

func (s *Server) getProject(w http.ResponseWriter, r *http.Request, _ User) {
	if p := s.projectOf(w, r); p != nil {
		writeJSON(w, http.StatusOK, s.projectJSON(p))
	}
}

func (s *Server) getBranch(w http.ResponseWriter, r *http.Request, _ User) {
	p := s.projectOf(w, r)
	if p == nil {
		return
	}
	name := r.PathValue("branch")
	sha, ok := p.Repo.Branches[name]
	if !ok {
		notFound(w, "Branch")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": name, "commit": s.commitJSON(p, p.Repo.Commits[sha]),
		"merged": false, "protected": name == p.Repo.DefaultBranch, "default": name == p.Repo.DefaultBranch,
		"web_url": s.projectURL(p) + "/-/tree/" + name})
}

func (s *Server) getCommit(w http.ResponseWriter, r *http.Request, _ User) {
	p := s.projectOf(w, r)
	if p == nil {
		return
	}
	c := p.Repo.Resolve(r.PathValue("sha"))
	if c == nil {
		notFound(w, "Commit")
		return
	}
	out := s.commitJSON(p, c)
	out["last_pipeline"] = s.lastPipeline(p, c.SHA)
	writeJSON(w, http.StatusOK, out)
}

// createCommit is POST /projects/:id/repository/commits: actions applied on
// start_sha / start_branch (else the branch's head), the branch created or, with
// force, overwritten; the author may be given, the committer is the token's user.
func (s *Server) createCommit(w http.ResponseWriter, r *http.Request, u User) {
	p := s.projectOf(w, r)
	if p == nil {
		return
	}
	var in struct {
		Branch        string `json:"branch"`
		CommitMessage string `json:"commit_message"`
		StartBranch   string `json:"start_branch"`
		StartSHA      string `json:"start_sha"`
		Actions       []struct {
			Action   string `json:"action"`
			FilePath string `json:"file_path"`
			Content  string `json:"content"`
			Encoding string `json:"encoding"`
		} `json:"actions"`
		AuthorEmail string `json:"author_email"`
		AuthorName  string `json:"author_name"`
		Force       bool   `json:"force"`
	}
	if !decode(w, r, &in) {
		return
	}
	switch {
	case in.Branch == "":
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "branch is missing"})
		return
	case in.CommitMessage == "":
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "commit_message is missing"})
		return
	case in.Actions == nil:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "actions is missing"})
		return
	case in.StartBranch != "" && in.StartSHA != "":
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "start_branch, start_sha are mutually exclusive"})
		return
	}
	head, exists := p.Repo.Branches[in.Branch]
	var parent *gitstore.Commit
	switch {
	case in.StartSHA != "":
		if parent = p.Repo.Commits[in.StartSHA]; parent == nil {
			badRequest(w, fmt.Sprintf("Invalid start SHA: %s", in.StartSHA))
			return
		}
	case in.StartBranch != "":
		if parent = p.Repo.Resolve(in.StartBranch); parent == nil || p.Repo.Branches[in.StartBranch] == "" {
			badRequest(w, fmt.Sprintf("Invalid reference name: %s", in.StartBranch))
			return
		}
	case exists:
		parent = p.Repo.Commits[head]
	default:
		badRequest(w, "You can only create or edit files when you are on a branch")
		return
	}
	if exists && parent.SHA != head && !in.Force && !p.Repo.IsAncestor(head, parent.SHA) {
		badRequest(w, fmt.Sprintf("A branch called '%s' already exists. Switch to that branch in order to make changes", in.Branch))
		return
	}
	files := map[string]string{}
	for _, a := range in.Actions {
		content := a.Content
		if a.Encoding == "base64" {
			b, err := base64.StdEncoding.DecodeString(a.Content)
			if err != nil {
				badRequest(w, "content is not valid Base64")
				return
			}
			content = string(b)
		} else if !utf8.ValidString(content) {
			badRequest(w, "content is not valid UTF-8")
			return
		}
		_, present := p.Repo.Lookup(parent.Tree, a.FilePath)
		switch {
		case a.FilePath == "" || strings.HasPrefix(a.FilePath, "/"):
			badRequest(w, "file_path is invalid")
			return
		case a.Action == "update" && !present:
			badRequest(w, "A file with this name doesn't exist")
			return
		case a.Action == "create" && present:
			badRequest(w, "A file with this name already exists")
			return
		case a.Action != "update" && a.Action != "create":
			badRequest(w, fmt.Sprintf("emulator: action %q is not supported", a.Action))
			return
		}
		files[a.FilePath] = content
	}
	// GitLab writes the commit as the token's user with its commit email
	// (Gitlab::Git::User.from_gitlab); author_email/author_name change the author only.
	author := u.commitSig()
	if in.AuthorEmail != "" {
		author = gitstore.Signature{Name: in.AuthorName, Email: in.AuthorEmail}
	}
	c := p.Repo.NewCommit(&s.clock, p.Repo.WriteTree(parent.Tree, files), []string{parent.SHA}, in.CommitMessage,
		author, u.commitSig())
	s.moveBranch(p, in.Branch, c.SHA, u)
	writeJSON(w, http.StatusCreated, s.commitJSON(p, c))
}

// getTree lists a ref's tree like GitLab: id (object SHA), name, type, path, mode;
// offset pagination with X-Page, X-Per-Page, X-Next-Page, X-Total.
func (s *Server) getTree(w http.ResponseWriter, r *http.Request, _ User) {
	p := s.projectOf(w, r)
	if p == nil {
		return
	}
	q := r.URL.Query()
	ref := q.Get("ref")
	if ref == "" {
		ref = p.Repo.DefaultBranch
	}
	c := p.Repo.Resolve(ref)
	if c == nil {
		notFound(w, "Tree")
		return
	}
	recursive := q.Get("recursive") == "true"
	var all []map[string]any
	dirs := map[string]bool{}
	for _, e := range p.Repo.Trees[c.Tree] {
		parts := strings.Split(e.Path, "/")
		for i := 1; i < len(parts); i++ {
			dir := strings.Join(parts[:i], "/")
			if dirs[dir] || (!recursive && i > 1) {
				continue
			}
			dirs[dir] = true
			all = append(all, map[string]any{"id": gitstore.BlobSHA([]byte("tree " + c.Tree + dir)), "name": parts[i-1], "type": "tree", "path": dir, "mode": "040000"})
		}
		if recursive || len(parts) == 1 {
			all = append(all, map[string]any{"id": e.SHA, "name": parts[len(parts)-1], "type": "blob", "path": e.Path, "mode": e.Mode})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i]["path"].(string) < all[j]["path"].(string) })
	paginate(w, r, all)
}

// paginate writes one page of items with GitLab's offset pagination headers.
func paginate[T any](w http.ResponseWriter, r *http.Request, all []T) {
	q := r.URL.Query()
	perPage, _ := strconv.Atoi(q.Get("per_page"))
	if perPage <= 0 {
		perPage = 20
	}
	perPage = min(perPage, 100)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	out := []T{}
	for i := (page - 1) * perPage; i < len(all) && i < page*perPage; i++ {
		out = append(out, all[i])
	}
	h := w.Header()
	h.Set("X-Page", strconv.Itoa(page))
	h.Set("X-Per-Page", strconv.Itoa(perPage))
	h.Set("X-Total", strconv.Itoa(len(all)))
	h.Set("X-Total-Pages", strconv.Itoa(max(1, (len(all)+perPage-1)/perPage)))
	// Link is what clients that follow pages read (Renovate's GitlabHttp follows
	// rel="next" only); the X-* headers are GitLab's others.
	link := func(rel string, n int) string {
		u := *r.URL
		u.Scheme, u.Host = "http", r.Host
		q := u.Query()
		q.Set("page", strconv.Itoa(n))
		q.Set("per_page", strconv.Itoa(perPage))
		u.RawQuery = q.Encode()
		return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
	}
	last := max(1, (len(all)+perPage-1)/perPage)
	links := []string{}
	if page > 1 {
		links = append(links, link("prev", page-1))
	}
	if page*perPage < len(all) {
		h.Set("X-Next-Page", strconv.Itoa(page+1))
		links = append(links, link("next", page+1))
	} else {
		h.Set("X-Next-Page", "")
	}
	links = append(links, link("first", 1), link("last", last))
	h.Set("Link", strings.Join(links, ", "))
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getRawBlob(w http.ResponseWriter, r *http.Request, _ User) {
	p := s.projectOf(w, r)
	if p == nil {
		return
	}
	b, ok := p.Repo.Blobs[r.PathValue("sha")]
	if !ok {
		notFound(w, "Blob")
		return
	}
	s.blobReads.Inc()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(b)
}

func (s *Server) mrOf(w http.ResponseWriter, r *http.Request) (*project, *mergeRequest) {
	return itemOf(s, w, r, func(p *project) []*mergeRequest { return p.MRs }, "Merge Request")
}

// itemOf finds the request's project and, in the list of it that items gives
// (merge requests and issues each number their own), the one the iid path value
// names; it answers 404 "<what> Not Found" and returns nils when either is missing.
func itemOf[T any](s *Server, w http.ResponseWriter, r *http.Request, items func(*project) []*T, what string) (*project, *T) {
	p := s.projectOf(w, r)
	if p == nil {
		return nil, nil
	}
	list := items(p)
	n, err := strconv.Atoi(r.PathValue("iid"))
	if err != nil || n < 1 || n > len(list) {
		notFound(w, what)
		return nil, nil
	}
	return p, list[n-1]
}

// listMRs is GET /projects/:id/merge_requests, filtered by state, source_branch,
// target_branch, author_username and scope (created_by_me: the token's user's,
// which Renovate asks for; all is the default for a project).
func (s *Server) listMRs(w http.ResponseWriter, r *http.Request, u User) {
	p := s.projectOf(w, r)
	if p == nil {
		return
	}
	q := r.URL.Query()
	state := q.Get("state")
	author := q.Get("author_username")
	switch q.Get("scope") {
	case "", "all":
	case "created_by_me":
		author = u.Username
	case "assigned_to_me":
		paginate(w, r, []map[string]any{}) // nobody is assigned here
		return
	default:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "scope does not have a valid value"})
		return
	}
	var out []map[string]any
	for i := len(p.MRs) - 1; i >= 0; i-- { // created_at desc, GitLab's default
		m := p.MRs[i]
		if (state != "" && state != "all" && m.State != state) ||
			(q.Get("source_branch") != "" && q.Get("source_branch") != m.Source) ||
			(q.Get("target_branch") != "" && q.Get("target_branch") != m.Target) ||
			(author != "" && author != m.Author) {
			continue
		}
		out = append(out, s.mrJSON(p, m))
	}
	if q.Get("sort") == "asc" {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	paginate(w, r, out)
}

func (s *Server) createMR(w http.ResponseWriter, r *http.Request, u User) {
	p := s.projectOf(w, r)
	if p == nil {
		return
	}
	var in struct {
		Title        string    `json:"title"`
		Description  string    `json:"description"`
		SourceBranch string    `json:"source_branch"`
		TargetBranch string    `json:"target_branch"`
		Draft        *bool     `json:"draft"`
		Labels       labelList `json:"labels"`
		// RemoveSourceBranch is stored and reported (force_remove_source_branch);
		// Squash is accepted and not modelled (merges here are merge commits).
		RemoveSourceBranch bool  `json:"remove_source_branch"`
		Squash             *bool `json:"squash"`
	}
	if !decode(w, r, &in) {
		return
	}
	switch {
	case in.Title == "":
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "title is missing"})
		return
	case in.SourceBranch == "" || in.TargetBranch == "":
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "source_branch, target_branch are missing"})
		return
	}
	src, okSrc := p.Repo.Branches[in.SourceBranch]
	_, okDst := p.Repo.Branches[in.TargetBranch]
	switch {
	case !okSrc:
		writeMessage(w, http.StatusUnprocessableEntity, []string{fmt.Sprintf("Source branch \"%s\" does not exist", in.SourceBranch)})
		return
	case !okDst:
		writeMessage(w, http.StatusUnprocessableEntity, []string{fmt.Sprintf("Target branch \"%s\" does not exist", in.TargetBranch)})
		return
	case in.SourceBranch == in.TargetBranch:
		writeMessage(w, http.StatusUnprocessableEntity, []string{"You can't use same project/branch for source and target"})
		return
	}
	for _, m := range p.MRs {
		if m.State == "opened" && m.Source == in.SourceBranch && m.Target == in.TargetBranch {
			writeMessage(w, http.StatusConflict, []string{fmt.Sprintf("Another open merge request already exists for this source branch: !%d", m.IID)})
			return
		}
	}
	title := in.Title
	if in.Draft != nil && *in.Draft && !draftTitle.MatchString(title) {
		title = "Draft: " + title
	}
	s.nextID++
	m := &mergeRequest{ID: s.nextID, IID: len(p.MRs) + 1, Title: title, Description: in.Description, State: "opened",
		Source: in.SourceBranch, Target: in.TargetBranch, SHA: src, Author: u.Username, CreatedAt: time.Unix(1700000000+s.clock, 0).UTC(),
		RemoveSource: in.RemoveSourceBranch}
	s.setLabels(p, m, in.Labels.Titles)
	p.MRs = append(p.MRs, m)
	s.event(p, m, "open", "", nil, u)
	writeJSON(w, http.StatusCreated, s.mrJSON(p, m))
}

// getMR is GET /merge_requests/:iid; include_diverged_commits_count (Renovate's
// getPr asks for it) adds how many commits the target has that the source lacks.
func (s *Server) getMR(w http.ResponseWriter, r *http.Request, _ User) {
	p, m := s.mrOf(w, r)
	if m == nil {
		return
	}
	out := s.mrJSON(p, m)
	if v := r.URL.Query().Get("include_diverged_commits_count"); v == "1" || v == "true" {
		target := p.Repo.Branches[m.Target]
		source := p.Repo.Ancestors(m.SHA)
		n := 0
		for sha := range p.Repo.Ancestors(target) {
			if !source[sha] {
				n++
			}
		}
		out["diverged_commits_count"] = n
	}
	writeJSON(w, http.StatusOK, out)
}

// updateMR is PUT /merge_requests/:iid: title, description, state_event and the
// draft flag (as the title prefix). A merged merge request cannot change state.
func (s *Server) updateMR(w http.ResponseWriter, r *http.Request, u User) {
	p, m := s.mrOf(w, r)
	if m == nil {
		return
	}
	var in struct {
		Title       *string `json:"title"`
		Description *string `json:"description"`
		StateEvent  *string `json:"state_event"`
		Draft       *bool   `json:"draft"`
		// Labels replaces the labels; AddLabels and RemoveLabels edit them.
		Labels       labelList `json:"labels"`
		AddLabels    labelList `json:"add_labels"`
		RemoveLabels labelList `json:"remove_labels"`
		TargetBranch *string   `json:"target_branch"`
	}
	if r.ContentLength != 0 || r.Header.Get("Content-Type") != "" {
		if !decode(w, r, &in) {
			return
		}
	}
	if in.StateEvent != nil && *in.StateEvent != "close" && *in.StateEvent != "reopen" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "state_event does not have a valid value"})
		return
	}
	if m.State == "merged" && (in.StateEvent != nil || in.Title != nil || in.Description != nil) {
		writeMessage(w, http.StatusUnprocessableEntity, []string{"Cannot modify a merged merge request"})
		return
	}
	title := in.Title
	if in.Draft != nil {
		t := m.Title
		if title != nil {
			t = *title
		}
		for draftTitle.MatchString(t) {
			t = draftTitle.ReplaceAllString(t, "")
		}
		if *in.Draft {
			t = "Draft: " + t
		}
		title = &t
	}
	if in.TargetBranch != nil && *in.TargetBranch != m.Target {
		if _, ok := p.Repo.Branches[*in.TargetBranch]; !ok || *in.TargetBranch == m.Source {
			writeMessage(w, http.StatusUnprocessableEntity, []string{fmt.Sprintf("Target branch \"%s\" does not exist", *in.TargetBranch)})
			return
		}
		m.Target = *in.TargetBranch
	}
	var labels []string
	if in.Labels.Present || in.AddLabels.Present || in.RemoveLabels.Present {
		labels = append([]string{}, m.Labels...)
		if in.Labels.Present {
			labels = append([]string{}, in.Labels.Titles...)
		}
		labels = append(labels, in.AddLabels.Titles...)
		labels = slices.DeleteFunc(labels, func(t string) bool { return slices.Contains(in.RemoveLabels.Titles, t) })
	}
	s.updateWithLabels(p, m, title, in.Description, labels, u)
	if in.StateEvent != nil {
		switch {
		case *in.StateEvent == "close" && m.State == "opened":
			m.State = "closed"
			s.event(p, m, "close", "", nil, u)
		case *in.StateEvent == "reopen" && m.State == "closed":
			m.State = "opened"
			if head := p.Repo.Branches[m.Source]; head != "" {
				m.SHA = head
			}
			s.event(p, m, "reopen", "", nil, u)
		}
	}
	writeJSON(w, http.StatusOK, s.mrJSON(p, m))
}

func (s *Server) noteJSON(n *note) map[string]any {
	return map[string]any{"id": n.ID, "body": n.Body, "system": n.System, "author": map[string]any{"username": n.Author},
		"noteable_type": "MergeRequest"}
}

func (s *Server) listNotes(w http.ResponseWriter, r *http.Request, _ User) {
	p, m := s.mrOf(w, r)
	if m == nil {
		return
	}
	all := []map[string]any{}
	for _, n := range p.Notes[m.IID] {
		all = append(all, s.noteJSON(n))
	}
	if r.URL.Query().Get("sort") != "asc" { // GitLab's default: newest first
		for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
			all[i], all[j] = all[j], all[i]
		}
	}
	paginate(w, r, all)
}

func (s *Server) createNote(w http.ResponseWriter, r *http.Request, u User) {
	p, m := s.mrOf(w, r)
	if m == nil {
		return
	}
	var in struct {
		Body string `json:"body"`
	}
	if !decode(w, r, &in) {
		return
	}
	if in.Body == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "body is missing"})
		return
	}
	writeJSON(w, http.StatusCreated, s.noteJSON(s.userNote(p, m, in.Body, u)))
}

// noteOf finds a merge request's note for its author to edit or delete: 404 for
// none (system notes included: they cannot be changed), 403 for another's.
func (s *Server) noteOf(w http.ResponseWriter, r *http.Request, u User) (*project, *mergeRequest, int) {
	p, m := s.mrOf(w, r)
	if m == nil {
		return nil, nil, -1
	}
	id, _ := strconv.ParseInt(r.PathValue("note"), 10, 64)
	for i, n := range p.Notes[m.IID] {
		if n.ID != id || n.System {
			continue
		}
		if n.Author != u.Username {
			writeMessage(w, http.StatusForbidden, "403 Forbidden")
			return nil, nil, -1
		}
		return p, m, i
	}
	notFound(w, "Note")
	return nil, nil, -1
}

// updateNote is PUT /merge_requests/:iid/notes/:note_id (Renovate's editComment).
func (s *Server) updateNote(w http.ResponseWriter, r *http.Request, u User) {
	p, m, i := s.noteOf(w, r, u)
	if i < 0 {
		return
	}
	var in struct {
		Body string `json:"body"`
	}
	if !decode(w, r, &in) {
		return
	}
	if in.Body == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "body is missing"})
		return
	}
	n := p.Notes[m.IID][i]
	n.Body = in.Body
	writeJSON(w, http.StatusOK, s.noteJSON(n))
}

// deleteNote is DELETE /merge_requests/:iid/notes/:note_id (Renovate's
// deleteComment): 204.
func (s *Server) deleteNote(w http.ResponseWriter, r *http.Request, u User) {
	p, m, i := s.noteOf(w, r, u)
	if i < 0 {
		return
	}
	p.Notes[m.IID] = append(p.Notes[m.IID][:i], p.Notes[m.IID][i+1:]...)
	w.WriteHeader(http.StatusNoContent)
}

// listMRDiffs is `GET /projects/:id/merge_requests/:iid/diffs`: the source head
// against the merge base with the target (for a merged MR, the target as it was:
// the merge commit's first parent), offset pagination. Renames are not detected
// (a deletion and a new file) and the diff text is not rendered ("").
func (s *Server) listMRDiffs(w http.ResponseWriter, r *http.Request, _ User) {
	p, m := s.mrOf(w, r)
	if m == nil {
		return
	}
	base := p.Repo.Branches[m.Target]
	if mc := p.Repo.Commits[m.MergeCommit]; mc != nil && len(mc.Parents) > 0 {
		base = mc.Parents[0]
	}
	if sc := p.Repo.Commits[m.SquashCommit]; sc != nil && len(sc.Parents) > 0 {
		base = sc.Parents[0]
	}
	all := []map[string]any{}
	for _, c := range p.Repo.Diff(p.Repo.MergeBase(base, m.SHA), m.SHA) {
		all = append(all, map[string]any{"old_path": c.Path, "new_path": c.Path, "a_mode": c.OldMode, "b_mode": c.NewMode,
			"diff": "", "new_file": c.Added, "renamed_file": false, "deleted_file": c.Deleted,
			"generated_file": false, "collapsed": false, "too_large": false})
	}
	paginate(w, r, all)
}
