// Package gitstore is the git object store the forge emulators share: blobs, flat
// trees (every blob below a tree, sorted by path) and commits, each named by the SHA
// git gives the object it stands for (a flat tree by its hierarchical tree objects),
// and branches; and the JSON file they persist it in. Package gitserve serves a
// store over git's smart HTTP protocol. It is not
// safe for concurrent use: each emulator holds its own lock around it.
package gitstore

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Entry is a blob in a flat tree.
type Entry struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
	SHA  string `json:"sha"`
}

// Signature is a commit's author or committer.
type Signature struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Date  string `json:"date"`
}

// Commit is a stored commit.
type Commit struct {
	SHA       string    `json:"sha"`
	Tree      string    `json:"tree"`
	Parents   []string  `json:"parents"`
	Message   string    `json:"message"`
	Author    Signature `json:"author"`
	Committer Signature `json:"committer"`
	// Headers are the commit object's header lines after committer (gpgsig,
	// encoding, mergetag), verbatim with a newline each, so that a commit pushed
	// with them keeps its SHA.
	Headers string `json:"headers,omitempty"`
}

// Title is the first line of the message, as forges show it.
func (c *Commit) Title() string {
	t, _, _ := strings.Cut(c.Message, "\n")
	return t
}

// Summary is a commit as the emulators' tests read it.
type Summary struct {
	SHA, Message, AuthorEmail, CommitterEmail string
	Parents                                   []string
}

// Summary copies what tests read of c.
func (c *Commit) Summary() Summary {
	return Summary{SHA: c.SHA, Message: c.Message, AuthorEmail: c.Author.Email, CommitterEmail: c.Committer.Email,
		Parents: append([]string(nil), c.Parents...)}
}

// Repo is one repository's objects and branches. Its fields are exported so an
// emulator can save and load it as JSON.
type Repo struct {
	DefaultBranch string             `json:"defaultBranch"`
	Branches      map[string]string  `json:"branches"` // name -> commit SHA
	Blobs         map[string][]byte  `json:"blobs"`
	Trees         map[string][]Entry `json:"trees"`
	Commits       map[string]*Commit `json:"commits"`
	// Subtrees makes PutTree store, beside a tree, the tree of every directory
	// below it, for a forge whose API reads a directory's tree by its SHA (GitHub's
	// git/trees); GitLab lists trees by path and does not need them. It is not
	// saved: the emulator sets it on every repository it creates or loads.
	Subtrees bool `json:"-"`
}

// New returns a repository with one commit holding files on defaultBranch.
func New(defaultBranch string, files map[string]string, clock *int64, sig Signature) *Repo {
	r := &Repo{DefaultBranch: defaultBranch}
	r.Init()
	c := r.NewCommit(clock, r.WriteTree("", files), nil, "Initial commit", sig, sig)
	r.Branches[defaultBranch] = c.SHA
	return r
}

// Init makes the maps a loaded repository lacks.
func (r *Repo) Init() {
	if r.Branches == nil {
		r.Branches = map[string]string{}
	}
	if r.Blobs == nil {
		r.Blobs = map[string][]byte{}
	}
	if r.Trees == nil {
		r.Trees = map[string][]Entry{}
	}
	if r.Commits == nil {
		r.Commits = map[string]*Commit{}
	}
}

// BlobSHA is git's object name of a blob.
func BlobSHA(content []byte) string { return ObjectSHA("blob", content) }

// treeSHA is git's object name of the tree a flat listing stands for: the
// hierarchical tree objects git would write for it (see TreeObjects), so that the
// SHAs the emulators hand out are the ones `git rev-parse` prints after a clone.
func treeSHA(entries []Entry) string {
	sha, _ := buildTree(entries, nil)
	return sha
}

// TreeObjects are the git tree objects (SHA -> body, without the "tree <size>\0"
// header) of a flat tree and of every directory below it: what a git repository
// holds for it.
func TreeObjects(entries []Entry) (root string, objects map[string][]byte) {
	objects = map[string][]byte{}
	root, _ = buildTree(entries, objects)
	return root, objects
}

// buildTree hashes the tree of entries (paths relative to it) and, when objects is
// not nil, records the body of it and of every subtree. Git sorts a tree's entries by
// name with a directory compared as name+"/", and writes each as
// "mode name\0<20-byte id>", a directory with mode 40000.
func buildTree(entries []Entry, objects map[string][]byte) (string, []byte) {
	type item struct {
		name, mode string
		id         []byte
	}
	var items []item
	subs := map[string][]Entry{}
	var order []string
	for _, e := range entries {
		if dir, rest, ok := strings.Cut(e.Path, "/"); ok {
			if _, seen := subs[dir]; !seen {
				order = append(order, dir)
			}
			subs[dir] = append(subs[dir], Entry{Path: rest, Mode: e.Mode, SHA: e.SHA})
			continue
		}
		id, _ := hex.DecodeString(e.SHA)
		items = append(items, item{name: e.Path, mode: e.Mode, id: id})
	}
	for _, dir := range order {
		sha, _ := buildTree(subs[dir], objects)
		id, _ := hex.DecodeString(sha)
		items = append(items, item{name: dir, mode: "40000", id: id})
	}
	key := func(it item) string {
		if it.mode == "40000" {
			return it.name + "/"
		}
		return it.name
	}
	sort.Slice(items, func(i, j int) bool { return key(items[i]) < key(items[j]) })
	var body []byte
	for _, it := range items {
		body = append(body, it.mode+" "+it.name+"\x00"...)
		body = append(body, it.id...)
	}
	sha := ObjectSHA("tree", body)
	if objects != nil {
		objects[sha] = body
	}
	return sha, body
}

// ObjectSHA is git's object name of an object of typ ("blob", "tree", "commit").
func ObjectSHA(typ string, body []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "%s %d\x00", typ, len(body))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// PutBlob stores content and returns its SHA.
func (r *Repo) PutBlob(content []byte) string {
	sha := BlobSHA(content)
	r.Blobs[sha] = append([]byte(nil), content...)
	return sha
}

// PutTree stores a flat tree (and, with Subtrees, the tree of every directory
// below it) and returns its SHA.
func (r *Repo) PutTree(entries []Entry) string {
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	sha := treeSHA(entries)
	if _, ok := r.Trees[sha]; ok {
		return sha
	}
	r.Trees[sha] = entries
	if r.Subtrees {
		r.putSubtrees(entries)
	}
	return sha
}

// IndexSubtrees stores, for a repository with Subtrees, the tree of every directory
// below every stored tree under its SHA: a repository saved before trees were named
// by git's hash holds its subtrees under other names.
func (r *Repo) IndexSubtrees() {
	if !r.Subtrees {
		return
	}
	for _, entries := range r.Trees {
		r.putSubtrees(entries)
	}
}

func (r *Repo) putSubtrees(entries []Entry) {
	dirs := map[string][]Entry{}
	for _, e := range entries {
		parts := strings.Split(e.Path, "/")
		for i := 1; i < len(parts); i++ {
			dir := strings.Join(parts[:i], "/")
			dirs[dir] = append(dirs[dir], Entry{Path: strings.Join(parts[i:], "/"), Mode: e.Mode, SHA: e.SHA})
		}
	}
	for _, sub := range dirs {
		r.PutTree(sub)
	}
}

// SubtreeSHA is the SHA of directory dir inside a flat tree: the SHA PutTree gives
// the directory's own tree.
func SubtreeSHA(entries []Entry, dir string) string {
	var sub []Entry
	for _, e := range entries {
		if rest, ok := strings.CutPrefix(e.Path, dir+"/"); ok {
			sub = append(sub, Entry{Path: rest, Mode: e.Mode, SHA: e.SHA})
		}
	}
	sort.Slice(sub, func(i, j int) bool { return sub[i].Path < sub[j].Path })
	return treeSHA(sub)
}

// Edit is one change to a tree: Path becomes the stored blob SHA with Mode, or
// with Delete is removed.
type Edit struct {
	Path, Mode, SHA string
	Delete          bool
}

// EditTree stores base (a tree SHA, or "" for none) with edits applied in order and
// returns the new tree's SHA.
func (r *Repo) EditTree(base string, edits []Edit) string {
	byPath := map[string]Entry{}
	for _, e := range r.Trees[base] {
		byPath[e.Path] = e
	}
	for _, ed := range edits {
		if ed.Delete {
			delete(byPath, ed.Path)
		} else {
			byPath[ed.Path] = Entry{Path: ed.Path, Mode: ed.Mode, SHA: ed.SHA}
		}
	}
	entries := make([]Entry, 0, len(byPath))
	for _, e := range byPath {
		entries = append(entries, e)
	}
	return r.PutTree(entries)
}

// WriteTree is base (a tree SHA, or "" for none) with files (path -> content)
// written over it as regular files; EditTree also deletes and sets modes.
func (r *Repo) WriteTree(base string, files map[string]string) string {
	edits := make([]Edit, 0, len(files))
	for p, c := range files {
		edits = append(edits, Edit{Path: p, Mode: "100644", SHA: r.PutBlob([]byte(c))})
	}
	return r.EditTree(base, edits)
}

// Lookup finds path in a tree.
func (r *Repo) Lookup(tree, path string) (Entry, bool) {
	for _, e := range r.Trees[tree] {
		if e.Path == path {
			return e, true
		}
	}
	return Entry{}, false
}

// NewCommit stores a commit; clock makes every commit distinct, through the dates
// it gives signatures that have none (one second apart, as git's dates would be).
func (r *Repo) NewCommit(clock *int64, tree string, parents []string, msg string, author, committer Signature) *Commit {
	*clock++
	date := time.Unix(1700000000+*clock, 0).UTC().Format(time.RFC3339)
	if author.Date == "" {
		author.Date = date
	}
	if committer.Date == "" {
		committer.Date = date
	}
	c := &Commit{Tree: tree, Parents: parents, Message: msg, Author: author, Committer: committer}
	r.PutCommit(c)
	return c
}

// PutCommit names c by its git object (setting c.SHA), stores it and returns the SHA.
func (r *Repo) PutCommit(c *Commit) string {
	c.SHA = ObjectSHA("commit", c.Object())
	r.Commits[c.SHA] = c
	return c.SHA
}

// Object is the body of the git commit object c stands for: tree, parents, author
// and committer lines (a date as "<unix seconds> <+hhmm>"), any extra headers, a
// blank line and the message. A date that is not RFC 3339 counts as the Unix epoch.
func (c *Commit) Object() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "tree %s\n", c.Tree)
	for _, p := range c.Parents {
		fmt.Fprintf(&b, "parent %s\n", p)
	}
	fmt.Fprintf(&b, "author %s\ncommitter %s\n", c.Author.gitLine(), c.Committer.gitLine())
	b.WriteString(c.Headers)
	b.WriteString("\n")
	b.WriteString(c.Message)
	return []byte(b.String())
}

// gitLine is the signature as a commit object writes it: "Name <email> unix +hhmm".
func (s Signature) gitLine() string {
	t, err := time.Parse(time.RFC3339, s.Date)
	if err != nil {
		t = time.Unix(0, 0).UTC()
	}
	return fmt.Sprintf("%s <%s> %d %s", s.Name, s.Email, t.Unix(), t.Format("-0700"))
}

// ParseCommit reads the body of a git commit object (as `git cat-file commit`
// prints it) into a Commit named sha. It fails on an object whose fields the store
// cannot hold such that PutCommit names it sha again.
func ParseCommit(sha string, body []byte) (*Commit, error) {
	head, msg, ok := strings.Cut(string(body), "\n\n")
	if !ok {
		head, msg = strings.TrimSuffix(string(body), "\n"), ""
	}
	c := &Commit{Message: msg}
	lines := strings.Split(head, "\n")
	for i := 0; i < len(lines); i++ {
		key, val, _ := strings.Cut(lines[i], " ")
		switch {
		case key == "tree" && c.Tree == "":
			c.Tree = val
		case key == "parent":
			c.Parents = append(c.Parents, val)
		case key == "author":
			c.Author = parseSignature(val)
		case key == "committer":
			c.Committer = parseSignature(val)
		default:
			// gpgsig, encoding, mergetag …: kept verbatim with their continuation lines.
			c.Headers += lines[i] + "\n"
		}
	}
	if got := ObjectSHA("commit", c.Object()); got != sha {
		return nil, fmt.Errorf("commit %s: the store cannot hold it faithfully (it would be %s)", sha, got)
	}
	c.SHA = sha
	return c, nil
}

// parseSignature reads "Name <email> unix +hhmm".
func parseSignature(s string) Signature {
	lt, gt := strings.LastIndex(s, "<"), strings.LastIndex(s, ">")
	if lt < 0 || gt < lt {
		return Signature{Name: s}
	}
	sig := Signature{Name: strings.TrimSuffix(s[:lt], " "), Email: s[lt+1 : gt]}
	var unix int64
	var zone string
	if _, err := fmt.Sscanf(strings.TrimSpace(s[gt+1:]), "%d %s", &unix, &zone); err == nil {
		if z, err := time.Parse("-0700", zone); err == nil {
			sig.Date = time.Unix(unix, 0).In(z.Location()).Format(time.RFC3339)
		}
	}
	return sig
}

// CommitFiles stores a commit by sig of files (path -> content) on top of branch's
// head, as a person's push does, and returns it; the caller moves the branch, so
// that it can tell the forge's merge requests. It fails when there is no branch.
func (r *Repo) CommitFiles(clock *int64, branch string, files map[string]string, msg string, sig Signature) (*Commit, error) {
	parent := r.Commits[r.Branches[branch]]
	if parent == nil {
		return nil, fmt.Errorf("no branch %s", branch)
	}
	return r.NewCommit(clock, r.WriteTree(parent.Tree, files), []string{parent.SHA}, msg, sig, sig), nil
}

// Resolve reads a ref: a branch name or a commit SHA.
func (r *Repo) Resolve(ref string) *Commit {
	if sha, ok := r.Branches[ref]; ok {
		return r.Commits[sha]
	}
	return r.Commits[ref]
}

// FileAt is the content of path at ref (a branch or commit SHA); false when ref
// or path is not there.
func (r *Repo) FileAt(ref, path string) (string, bool) {
	c := r.Resolve(ref)
	if c == nil {
		return "", false
	}
	e, ok := r.Lookup(c.Tree, path)
	return string(r.Blobs[e.SHA]), ok
}

// Head is the commit at the tip of branch; false when there is no such branch.
func (r *Repo) Head(branch string) (Summary, bool) {
	c := r.Commits[r.Branches[branch]]
	if c == nil {
		return Summary{}, false
	}
	return c.Summary(), true
}

// IsAncestor reports whether anc is sha or one of its ancestors.
func (r *Repo) IsAncestor(anc, sha string) bool {
	seen := map[string]bool{}
	stack := []string{sha}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if c == anc {
			return true
		}
		if seen[c] || r.Commits[c] == nil {
			continue
		}
		seen[c] = true
		stack = append(stack, r.Commits[c].Parents...)
	}
	return false
}

// Ancestors is the set of sha and every commit it reaches through any parent
// (commits missing from the store are left out).
func (r *Repo) Ancestors(sha string) map[string]bool {
	seen := map[string]bool{}
	for q := []string{sha}; len(q) > 0; q = q[1:] {
		if c := r.Commits[q[0]]; c != nil && !seen[q[0]] {
			seen[q[0]] = true
			q = append(q, c.Parents...)
		}
	}
	return seen
}

// MergeBase is the first ancestor of head (breadth first) that base reaches ("" if none).
func (r *Repo) MergeBase(base, head string) string {
	reach := r.Ancestors(base)
	seen := map[string]bool{}
	for q := []string{head}; len(q) > 0; q = q[1:] {
		if reach[q[0]] {
			return q[0]
		}
		if c := r.Commits[q[0]]; c != nil && !seen[q[0]] {
			seen[q[0]] = true
			q = append(q, c.Parents...)
		}
	}
	return ""
}

// Change is one path that differs between two commits.
type Change struct {
	Path             string
	OldMode, NewMode string
	// OldSHA and NewSHA are the blobs before and after ("" where there is none), so a
	// forge can tell a change of content from a change of mode alone.
	OldSHA, NewSHA string
	Added, Deleted bool
}

// Diff lists the paths whose blob or mode differ from commit from to commit to,
// sorted by path (renames are not detected: a removal and an addition).
func (r *Repo) Diff(from, to string) []Change {
	entries := func(sha string) map[string]Entry {
		out := map[string]Entry{}
		if c := r.Commits[sha]; c != nil {
			for _, e := range r.Trees[c.Tree] {
				out[e.Path] = e
			}
		}
		return out
	}
	a, b := entries(from), entries(to)
	var out []Change
	for p, e := range b {
		old, ok := a[p]
		switch {
		case !ok:
			out = append(out, Change{Path: p, OldMode: "0", NewMode: e.Mode, NewSHA: e.SHA, Added: true})
		case old.SHA != e.SHA || old.Mode != e.Mode:
			out = append(out, Change{Path: p, OldMode: old.Mode, NewMode: e.Mode, OldSHA: old.SHA, NewSHA: e.SHA})
		}
	}
	for p, e := range a {
		if _, ok := b[p]; !ok {
			out = append(out, Change{Path: p, OldMode: e.Mode, NewMode: "0", OldSHA: e.SHA, Deleted: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
