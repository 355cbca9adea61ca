// Package prbody renders and parses the description of a ChangeGroup's pull request.
//
// Everything nudgeflow writes lives in a managed section between two HTML comments.
// Only an edit inside that section (other than its checkboxes and the skip marker,
// which are controls) is a human edit of the description: a checksum of the section
// is kept in its hidden state. Text outside the section — a person's note, or what a
// bot such as a CLA or coverage app appends — is left alone and kept. Rendering is
// deterministic (no map iteration, times in UTC), so the same input renders the same
// bytes and an unchanged description is never rewritten. Parse takes untrusted text.
package prbody

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/pac"
)

const (
	// Begin and End delimit the managed section.
	Begin = "<!-- nudgeflow:begin -->"
	End   = "<!-- nudgeflow:end -->"

	statePrefix = "<!-- nudgeflow:state "
	stateSuffix = " -->"

	// RebaseLabel and ReleaseLabel are the control checkboxes' texts.
	RebaseLabel  = "rebase (discard manual changes and let nudgeflow update this PR again)"
	releaseLabel = "release now (stop waiting and build with the components that are ready)"
)

// Row states as the workflow names them.
const (
	StateReady   = "Ready"
	stateWaiting = "Waiting"
	StateDropped = "Dropped"
)

// Row is one line of the status table.
type Row struct {
	// Name is shown in the Image column (the nudging component, as in ADR 59).
	Name      string
	Current   string
	New       string
	State     string
	UpdatedAt time.Time
	// Repositories are the image repositories whose references this row rewrites
	// (the built one, the ones it is released to); see Input.ReferencesKnown.
	Repositories []string
}

// Input is what a description shows.
type Input struct {
	ChangeGroup    string
	ChangeGroupURL string
	Rows           []Row
	// Hold keeps the [skip ci] line and the draft explanation.
	Hold bool
	// Rebase and ReleaseNow are the checkboxes' states to render.
	Rebase     bool
	ReleaseNow bool
	// NoDraft: the repository allows no draft PRs, so the PR was opened as a normal
	// one; the hold is the skip marker alone (kept in the hidden state).
	NoDraft bool
	// ReferencesKnown: the rows' Repositories were looked up, so a row with none is
	// referenced nowhere in the matched files and is flagged.
	ReferencesKnown bool
	// FileMatch are the patterns of the files searched (shown with a flag).
	FileMatch []string
}

// NotReferenced lists the rows (not dropped) whose image no matched file references.
func (in Input) NotReferenced() []string {
	var out []string
	for _, r := range in.Rows {
		if in.ReferencesKnown && r.State != StateDropped && len(r.Repositories) == 0 {
			out = append(out, r.Name)
		}
	}
	return out
}

// State is the hidden machine-readable state carried in the description.
type State struct {
	Version     int        `json:"v"`
	ChangeGroup string     `json:"changeGroup"`
	Mode        string     `json:"mode"`
	Rows        []StateRow `json:"rows,omitempty"`
	NoDraft     bool       `json:"noDraft,omitempty"`
	// Sum is a checksum of the section as rendered, controls left out; an edit of
	// the section is told by a mismatch.
	Sum string `json:"sum,omitempty"`
}

// StateRow is a row's applied digest in the hidden state.
type StateRow struct {
	Name  string `json:"name"`
	New   string `json:"new,omitempty"`
	State string `json:"state"`
}

// Render returns the description for in. The same input always gives the same bytes.
func Render(in Input) string {
	in = validUTF8(in)
	var b strings.Builder
	b.WriteString(Begin + "\n")
	b.WriteString("## Orchestrated Component Update\n\n")
	fmt.Fprintf(&b, "This PR is managed by ChangeGroup %s.\n\n", code(in.ChangeGroup))
	b.WriteString("### Component Status\n\n")
	b.WriteString("| Image | Current | New | State | Last Updated | Rewrites |\n")
	b.WriteString("|-------|---------|-----|-------|--------------|----------|\n")
	st := State{Version: 1, ChangeGroup: in.ChangeGroup, Mode: "Release", NoDraft: in.NoDraft}
	if in.Hold {
		st.Mode = "Hold"
	}
	for _, r := range in.Rows {
		updated := ""
		if !r.UpdatedAt.IsZero() {
			updated = r.UpdatedAt.UTC().Format("15:04:05 UTC")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(r.Name), cell(digestref.Short(r.Current)),
			cell(digestref.Short(r.New)), stateLabel(r.State), updated, rewrites(in, r))
		st.Rows = append(st.Rows, StateRow{Name: r.Name, New: r.New, State: r.State})
	}
	b.WriteString("\n")
	if missing := in.NotReferenced(); len(missing) > 0 {
		names := make([]string, len(missing))
		for i, n := range missing {
			names[i] = code(n)
		}
		patterns := make([]string, len(in.FileMatch))
		for i, p := range in.FileMatch {
			patterns[i] = code(p)
		}
		fmt.Fprintf(&b, "⚠️ **Not referenced:** %s: no file matched by %s references its image, by the repository it "+
			"was built in or one it is released to. Its builds change nothing in this PR: drop it from the ChangeGroup, "+
			"or add the reference.\n\n", strings.Join(names, ", "), strings.Join(patterns, ", "))
	}
	if in.Hold {
		b.WriteString(pac.SkipMarker + "\n\n")
		if in.NoDraft {
			b.WriteString("This repository does not allow draft pull requests, so this PR is open for review, but it is " +
				"held: the directive above and nudgeflow's commits keep Pipelines as Code from triggering builds until " +
				"all components are ready or a release is requested.\n\n")
		} else {
			b.WriteString("This PR will remain in draft until all components are ready or until manually marked as " +
				"ready for review. The directive above keeps Pipelines as Code from triggering builds until it is removed.\n\n")
		}
	} else {
		b.WriteString("All components are ready, or a release was requested: this PR is ready for review and builds " +
			"with the digests above.\n\n")
	}
	if in.ChangeGroupURL != "" {
		fmt.Fprintf(&b, "[View ChangeGroup](%s)\n\n", linkTarget(in.ChangeGroupURL))
	}
	b.WriteString("### Controls\n\n")
	fmt.Fprintf(&b, "- [%s] %s\n", tick(in.Rebase), RebaseLabel)
	fmt.Fprintf(&b, "- [%s] %s\n\n", tick(in.ReleaseNow), releaseLabel)
	st.Sum = sectionSum(strings.TrimPrefix(b.String(), Begin))
	js, _ := json.Marshal(st) // cannot fail: plain strings and ints; HTML-escapes < and >
	b.WriteString(statePrefix + escapeBrackets(js) + stateSuffix + "\n")
	b.WriteString(End)
	return b.String()
}

// sectionSum checksums the managed section's text without its controls (the
// checkboxes' ticks, skip-marker lines) and without the hidden state.
func sectionSum(section string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.ReplaceAll(section, "\r\n", "\n"), "\n") {
		line = strings.TrimRight(line, " \t")
		switch {
		case strings.HasPrefix(line, statePrefix), line == "", pac.HasSkipMarker(line) && len(line) < 16:
			continue
		}
		if m := checkboxRE.FindStringSubmatch(line); m != nil {
			line = "- [ ] " + m[2]
		}
		b.WriteString(line + "\n")
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// Compose puts a freshly rendered section in place of the managed section of the
// current description, keeping the text around it; a description without a
// managed section is replaced.
func Compose(current, rendered string) string {
	current = strings.ReplaceAll(current, "\r\n", "\n")
	i := strings.Index(current, Begin)
	j := strings.LastIndex(current, End)
	if i < 0 || j < i {
		return rendered
	}
	return current[:i] + rendered + current[j+len(End):]
}

// Parsed is what a description says.
type Parsed struct {
	// Managed: the managed section is present and well formed.
	Managed bool
	// Outside is the text outside the managed section, trimmed (kept, never an edit).
	Outside string
	// HumanEdited: the managed section was edited (or is missing).
	HumanEdited bool
	// Section is the managed section's text (for keying an edit).
	Section string
	// Rebase and ReleaseNow are the checkboxes' states.
	Rebase     bool
	ReleaseNow bool
	// SkipMarker: a Pipelines as Code skip marker appears anywhere in the description.
	SkipMarker bool
	// State is the hidden state; nil when absent or unreadable.
	State *State
}

var checkboxRE = regexp.MustCompile(`(?m)^\s*[-*]\s+\[([ xX])\]\s+(.*?)\s*$`)

// Parse reads a description (untrusted).
func Parse(body string) Parsed {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	p := Parsed{SkipMarker: pac.HasSkipMarker(body)}
	i := strings.Index(body, Begin)
	j := strings.LastIndex(body, End)
	if i < 0 || j < i {
		p.Outside = strings.TrimSpace(body)
		p.HumanEdited = true
		return p
	}
	p.Managed = true
	p.Outside = strings.TrimSpace(body[:i] + "\n" + body[j+len(End):])
	section := body[i+len(Begin) : j]
	p.Section = section
	for _, m := range checkboxRE.FindAllStringSubmatch(section, -1) {
		ticked := m[1] != " "
		switch m[2] {
		case RebaseLabel:
			p.Rebase = p.Rebase || ticked
		case releaseLabel:
			p.ReleaseNow = p.ReleaseNow || ticked
		}
	}
	if k := strings.Index(section, statePrefix); k >= 0 {
		rest := section[k+len(statePrefix):]
		if e := strings.Index(rest, stateSuffix); e >= 0 {
			var st State
			if json.Unmarshal([]byte(rest[:e]), &st) == nil {
				p.State = &st
			}
		}
	}
	// Descriptions rendered before the checksum existed cannot tell an edit: only
	// commits count there.
	p.HumanEdited = p.State != nil && p.State.Sum != "" && p.State.Sum != sectionSum(section)
	return p
}

// rewrites is the Rewrites cell: where the row's image is referenced.
func rewrites(in Input, r Row) string {
	switch {
	case !in.ReferencesKnown || r.State == StateDropped:
		return ""
	case len(r.Repositories) == 0:
		return "⚠️ not referenced"
	}
	return cell(strings.Join(r.Repositories, ", "))
}

func tick(b bool) string {
	if b {
		return "x"
	}
	return " "
}

func stateLabel(s string) string {
	switch s {
	case StateReady:
		return "✅ Ready"
	case stateWaiting:
		return "⏳ Waiting"
	case StateDropped:
		return "➖ Dropped"
	default:
		return cell(s)
	}
}

// cell makes text safe inside a table cell: one line, no pipes, no HTML comments, no
// brackets (so no skip marker and no checkbox can be smuggled in).
func cell(s string) string {
	r := strings.NewReplacer("\r", " ", "\n", " ", "|", `\|`, "<", "&lt;", ">", "&gt;", "`", "'", "[", "&#91;", "]", "&#93;")
	return r.Replace(s)
}

// code quotes a name in backticks without letting it break out of them.
func code(s string) string {
	return "`" + cell(s) + "`"
}

// linkTarget keeps a URL from breaking out of the Markdown link or the section.
func linkTarget(u string) string {
	r := strings.NewReplacer("\r", "", "\n", "", " ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E", "[", "%5B", "]", "%5D")
	return r.Replace(u)
}

// escapeBrackets writes '[' and ']' inside JSON strings as \u escapes, so no text in the
// hidden state can read as a skip marker; structural brackets stay.
func escapeBrackets(js []byte) string {
	var b strings.Builder
	inString, escaped := false, false
	for _, c := range js {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString && c == '[':
			b.WriteString(`\u005b`)
			continue
		case inString && c == ']':
			b.WriteString(`\u005d`)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// validUTF8 replaces invalid UTF-8 in every text of in, so the table and the hidden
// state carry the same text.
func validUTF8(in Input) Input {
	v := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
	in.ChangeGroup, in.ChangeGroupURL = v(in.ChangeGroup), v(in.ChangeGroupURL)
	rows := make([]Row, len(in.Rows))
	for i, r := range in.Rows {
		rows[i] = Row{Name: v(r.Name), Current: v(r.Current), New: v(r.New), State: v(r.State), UpdatedAt: r.UpdatedAt}
		for _, repo := range r.Repositories {
			rows[i].Repositories = append(rows[i].Repositories, v(repo))
		}
	}
	in.Rows = rows
	return in
}
