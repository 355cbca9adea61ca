// Package gitstore is the git object store the forge emulators share: blobs named by
// git's blob hash, flat trees (every blob below a tree, sorted by path), commits with
// a logical clock, and branches; and the JSON file they persist it in. It is not
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
func BlobSHA(content []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

func treeSHA(entries []Entry) string {
	h := sha1.New()
	for _, e := range entries {
		fmt.Fprintf(h, "%s %s\t%s\n", e.Mode, e.SHA, e.Path)
	}
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
	return sha
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

// NewCommit stores a commit; clock makes every commit distinct, like git's dates.
func (r *Repo) NewCommit(clock *int64, tree string, parents []string, msg string, author, committer Signature) *Commit {
	*clock++
	date := time.Unix(1700000000+*clock, 0).UTC().Format(time.RFC3339)
	if author.Date == "" {
		author.Date = date
	}
	if committer.Date == "" {
		committer.Date = date
	}
	h := sha1.New()
	fmt.Fprintf(h, "tree %s\n", tree)
	for _, p := range parents {
		fmt.Fprintf(h, "parent %s\n", p)
	}
	fmt.Fprintf(h, "author %s <%s> %s\ncommitter %s <%s> %s\nclock %d\n\n%s",
		author.Name, author.Email, author.Date, committer.Name, committer.Email, committer.Date, *clock, msg)
	c := &Commit{SHA: hex.EncodeToString(h.Sum(nil)), Tree: tree, Parents: parents, Message: msg, Author: author, Committer: committer}
	r.Commits[c.SHA] = c
	return c
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
