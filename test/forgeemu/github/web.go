package github

import (
	"html/template"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The web pages are read-only views for people (and the browser test) following a
// demo: repositories, pull requests with their rendered description, commits and
// the CI events counted by Pipelines as Code's rules. They need no token.

func (s *Server) webRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", s.webIndex)
	mux.HandleFunc("GET /ci", s.webCI)
	mux.HandleFunc("GET /{owner}/{repo}", s.webRepo)
	mux.HandleFunc("GET /{owner}/{repo}/pull/{number}", s.webPull)
}

type webPR struct {
	Repo, State, Title, Head, Base, HeadSHA, Author string
	Number                                          int
	Body                                            template.HTML
	RawBody                                         string
	Commits                                         []webCommit
	CI                                              []CIEvent
	Comments                                        []string
}

type webCommit struct {
	SHA, Message, Author string
}

type webRepo struct {
	Name, DefaultBranch string
	Branches            []string
	PRs                 []webPR
	Commits             []webCommit
}

func prState(p *pull) string {
	switch {
	case p.Merged:
		return "merged"
	case p.State == "closed":
		return "closed"
	case p.Draft:
		return "draft"
	}
	return "open"
}

// history walks first parents from sha, stopping at a commit in stop or after max.
func history(r *repo, sha string, stop map[string]bool, max int) []webCommit {
	var out []webCommit
	for c := r.Commits[sha]; c != nil && !stop[c.SHA] && len(out) < max; {
		out = append(out, webCommit{SHA: c.SHA, Message: c.Message, Author: c.Author.Name + " <" + c.Author.Email + ">"})
		if len(c.Parents) == 0 {
			break
		}
		c = r.Commits[c.Parents[0]]
	}
	return out
}

func (s *Server) webIndex(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	var repos []webRepo
	for _, r := range s.repos {
		wr := webRepo{Name: r.owner + "/" + r.name, DefaultBranch: r.DefaultBranch}
		for _, p := range r.pulls {
			if p != nil {
				wr.PRs = append(wr.PRs, webPR{Number: p.Number, State: prState(p)})
			}
		}
		repos = append(repos, wr)
	}
	s.mu.Unlock()
	sort.Slice(repos, func(i, j int) bool { return repos[i].Name < repos[j].Name })
	render(w, indexPage, repos)
}

func (s *Server) webCI(w http.ResponseWriter, _ *http.Request) {
	render(w, ciPage, s.CIEvents())
}

func (s *Server) webRepo(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	rp := s.repos[r.PathValue("owner")+"/"+r.PathValue("repo")]
	if rp == nil {
		s.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	wr := webRepo{Name: rp.owner + "/" + rp.name, DefaultBranch: rp.DefaultBranch,
		Commits: history(rp, rp.Branches[rp.DefaultBranch], nil, 50)}
	for branch := range rp.Branches {
		wr.Branches = append(wr.Branches, branch)
	}
	for ref := range rp.otherRefs {
		wr.Branches = append(wr.Branches, ref)
	}
	for i := len(rp.pulls) - 1; i >= 0; i-- {
		if p := rp.pulls[i]; p != nil {
			wr.PRs = append(wr.PRs, webPR{Repo: wr.Name, Number: p.Number, Title: p.Title, State: prState(p), Head: p.Head, Base: p.Base, Author: p.Author})
		}
	}
	s.mu.Unlock()
	sort.Strings(wr.Branches)
	render(w, repoPage, wr)
}

func (s *Server) webPull(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	rp := s.repos[r.PathValue("owner")+"/"+r.PathValue("repo")]
	n, _ := strconv.Atoi(r.PathValue("number"))
	if rp == nil || n < 1 || n > len(rp.pulls) || rp.pulls[n-1] == nil {
		s.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	p := rp.pulls[n-1]
	name := rp.owner + "/" + rp.name
	pr := webPR{Repo: name, Number: p.Number, Title: p.Title, State: prState(p), Head: p.Head, Base: p.Base,
		HeadSHA: p.HeadSHA, Author: p.Author, Body: RenderMarkdown(p.Body), RawBody: p.Body}
	base := rp.Branches[p.Base]
	if p.Merged {
		// The merge commit's first parent is the base before the merge.
		if c := rp.Commits[base]; c != nil && len(c.Parents) > 0 {
			base = c.Parents[0]
		}
	}
	pr.Commits = history(rp, p.HeadSHA, rp.Ancestors(base), 20)
	for _, c := range rp.comments[p.Number] {
		pr.Comments = append(pr.Comments, c.Body)
	}
	for _, e := range s.ci.Events() {
		if e.Repo == name && e.Number == p.Number {
			pr.CI = append(pr.CI, e)
		}
	}
	s.mu.Unlock()
	render(w, pullPage, pr)
}

func render(w http.ResponseWriter, t *template.Template, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := t.Execute(w, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

var (
	htmlComment = regexp.MustCompile(`(?s)<!--.*?-->`)
	inlineCode  = regexp.MustCompile("`([^`]+)`")
	bold        = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	link        = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`)
)

// inline renders code spans, bold and links of one escaped line.
func inline(line string) string {
	line = template.HTMLEscapeString(line)
	line = inlineCode.ReplaceAllString(line, "<code>$1</code>")
	line = bold.ReplaceAllString(line, "<strong>$1</strong>")
	return link.ReplaceAllStringFunc(line, func(m string) string {
		sub := link.FindStringSubmatch(m)
		if !strings.HasPrefix(sub[2], "http://") && !strings.HasPrefix(sub[2], "https://") {
			return m
		}
		return `<a href="` + sub[2] + `">` + sub[1] + `</a>`
	})
}

// RenderMarkdown renders the Markdown subset PR descriptions use: headings,
// tables, task lists, lists and paragraphs with code spans, bold and links. HTML
// comments (nudgeflow's hidden state) are dropped and everything else is escaped.
func RenderMarkdown(md string) template.HTML {
	var b strings.Builder
	var table [][]string
	flush := func() {
		if len(table) == 0 {
			return
		}
		b.WriteString("<table>\n")
		for i, row := range table {
			tag := "td"
			if i == 0 {
				tag = "th"
			}
			b.WriteString("<tr>")
			for _, c := range row {
				b.WriteString("<" + tag + ">" + inline(strings.TrimSpace(c)) + "</" + tag + ">")
			}
			b.WriteString("</tr>\n")
		}
		b.WriteString("</table>\n")
		table = nil
	}
	for _, line := range strings.Split(htmlComment.ReplaceAllString(md, ""), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "|") {
			cells := strings.Split(strings.Trim(t, "|"), "|")
			if strings.Trim(strings.Join(cells, ""), "-: ") != "" {
				table = append(table, cells)
			}
			continue
		}
		flush()
		switch {
		case t == "":
		case strings.HasPrefix(t, "#"):
			level := len(t) - len(strings.TrimLeft(t, "#"))
			h := "h" + strconv.Itoa(min(level+1, 6))
			b.WriteString("<" + h + ">" + inline(strings.TrimSpace(t[level:])) + "</" + h + ">\n")
		case strings.HasPrefix(t, "- [ ] "), strings.HasPrefix(t, "- [x] "):
			checked := ""
			if t[3] == 'x' {
				checked = " checked"
			}
			b.WriteString(`<div class="task"><input type="checkbox" disabled` + checked + `> ` + inline(t[6:]) + "</div>\n")
		case strings.HasPrefix(t, "- "), strings.HasPrefix(t, "* "):
			b.WriteString("<div class=\"item\">&bull; " + inline(t[2:]) + "</div>\n")
		default:
			b.WriteString("<p>" + inline(t) + "</p>\n")
		}
	}
	flush()
	// Every piece of text went through HTMLEscapeString.
	return template.HTML(b.String())
}

const webStyle = `<style>
body{font-family:sans-serif;max-width:72em;margin:1em auto;padding:0 1em;color:#1f2328}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #d0d7de;padding:.3em .6em;text-align:left}
code,pre{background:#f6f8fa;padding:.1em .3em}.state{padding:.2em .6em;border-radius:1em;color:#fff;background:#1f883d}
.draft{background:#6e7781}.merged{background:#8250df}.closed{background:#cf222e}.body{border:1px solid #d0d7de;padding:0 1em;border-radius:6px}
nav{margin-bottom:1em}</style>`

var funcs = template.FuncMap{"short": func(s string) string {
	if len(s) > 7 {
		return s[:7]
	}
	return s
}, "firstLine": func(s string) string { first, _, _ := strings.Cut(s, "\n"); return first }}

var (
	indexPage = template.Must(template.New("index").Funcs(funcs).Parse(`<!DOCTYPE html>
<html><head><title>GitHub emulator</title>` + webStyle + `</head><body>
<nav><a href="/">repositories</a> · <a href="/ci">CI events</a></nav>
<h1>Repositories</h1>
<table><tr><th>repository</th><th>default branch</th><th>pull requests</th></tr>
{{range .}}<tr><td><a href="/{{.Name}}">{{.Name}}</a></td><td>{{.DefaultBranch}}</td><td>{{range .PRs}}<a href="/{{$.Name}}/pull/{{.Number}}">#{{.Number}}</a> {{.State}} {{end}}</td></tr>
{{end}}</table></body></html>`))

	repoPage = template.Must(template.New("repo").Funcs(funcs).Parse(`<!DOCTYPE html>
<html><head><title>{{.Name}}</title>` + webStyle + `</head><body>
<nav><a href="/">repositories</a> · <a href="/ci">CI events</a></nav>
<h1>{{.Name}}</h1>
<h2>Pull requests</h2>
{{if .PRs}}<table><tr><th>#</th><th>title</th><th>state</th><th>branch</th></tr>
{{range .PRs}}<tr><td><a href="/{{.Repo}}/pull/{{.Number}}">#{{.Number}}</a></td><td>{{.Title}}</td><td><span class="state {{.State}}">{{.State}}</span></td><td>{{.Head}} → {{.Base}}</td></tr>
{{end}}</table>{{else}}<p>No pull requests.</p>{{end}}
<h2>Branches</h2><p>{{range .Branches}}<code>{{.}}</code> {{end}}</p>
<h2>Commits on {{.DefaultBranch}}</h2>
<table>{{range .Commits}}<tr><td><code>{{short .SHA}}</code></td><td>{{firstLine .Message}}</td><td>{{.Author}}</td></tr>{{end}}</table>
</body></html>`))

	pullPage = template.Must(template.New("pull").Funcs(funcs).Parse(`<!DOCTYPE html>
<html><head><title>{{.Title}} · {{.Repo}}#{{.Number}}</title>` + webStyle + `</head><body>
<nav><a href="/">repositories</a> · <a href="/{{.Repo}}">{{.Repo}}</a> · <a href="/ci">CI events</a></nav>
<h1>{{.Title}} <small>#{{.Number}}</small></h1>
<p><span class="state {{.State}}" id="pr-state">{{.State}}</span> {{.Author}} wants to merge <code>{{.Head}}</code> into <code>{{.Base}}</code> · head <code>{{short .HeadSHA}}</code></p>
<div class="body" id="pr-body">{{.Body}}</div>
<details><summary>raw description</summary><pre>{{.RawBody}}</pre></details>
<h2>Commits</h2>
<table>{{range .Commits}}<tr><td><code>{{short .SHA}}</code></td><td>{{.Message}}</td><td>{{.Author}}</td></tr>{{end}}</table>
<h2>CI builds (Pipelines as Code rules): <span id="ci-count">{{len .CI}}</span></h2>
<table>{{range .CI}}<tr><td>{{.Action}}</td><td><code>{{short .HeadSHA}}</code></td></tr>{{end}}</table>
<h2>Comments</h2>
{{range .Comments}}<div class="body"><p>{{.}}</p></div>{{else}}<p>None.</p>{{end}}
</body></html>`))

	ciPage = template.Must(template.New("ci").Funcs(funcs).Parse(`<!DOCTYPE html>
<html><head><title>CI events</title>` + webStyle + `</head><body>
<nav><a href="/">repositories</a></nav>
<h1>CI events</h1><p>Every event that starts a build by Pipelines as Code's rules (a skip marker in the head commit message starts none).</p>
<table><tr><th>pull request</th><th>action</th><th>head</th></tr>
{{range .}}<tr><td><a href="/{{.Repo}}/pull/{{.Number}}">{{.Repo}}#{{.Number}}</a></td><td>{{.Action}}</td><td><code>{{short .HeadSHA}}</code></td></tr>
{{end}}</table></body></html>`))
)
