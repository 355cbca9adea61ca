package forgejo

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"code.gitea.io/sdk/gitea"
	"go.temporal.io/sdk/temporal"

	"github.com/nudgeflow/nudgeflow/internal/forge"
)

// A push over git's own protocol (smart HTTP, receive-pack): the commit and the
// trees along the changed paths are built here from the parent's tree listing
// (already read by the caller's rewrite), sent as one pack with one ref update
// whose old value is the expected head. git updates the ref only if it still
// holds that value (a compare-and-swap under the ref's lock), so a person's push
// is never overwritten; a branch to create must not exist. One request and one ref
// write, where the API's compare-and-swap takes three (a scratch branch through
// the contents API, the branch update, the scratch branch's deletion), each a
// server-side push with its hooks, and the contents API a temporary clone.

// zeroSHA is git's "no such ref" object name (SHA-1 repositories).
const zeroSHA = "0000000000000000000000000000000000000000"

// isReceivePack says r is a push over smart HTTP.
func isReceivePack(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack")
}

// gitObject is one object of the pack: its type (1 commit, 2 tree, 3 blob) and body.
type gitObject struct {
	kind int
	body []byte
}

func (o gitObject) name() string {
	h := sha1.New()
	fmt.Fprintf(h, "%s %d\x00", [...]string{1: "commit", 2: "tree", 3: "blob"}[o.kind], len(o.body))
	h.Write(o.body)
	return hex.EncodeToString(h.Sum(nil))
}

// treeEntry is one entry of a tree object.
type treeEntry struct {
	mode, name, sha string
}

// pushGit commits p.Files on p.Parent as the bot and moves p.Branch to it in
// one receive-pack request. served is false, and nothing was written, when the
// server takes no push over HTTP or the repository is not a SHA-1 one: the
// caller writes through the API then.
func (c *Client) pushGit(ctx context.Context, p forge.Push) (_ forge.Commit, served bool, _ error) {
	if len(p.Parent.SHA) != 40 || len(p.Parent.Tree) != 40 {
		return forge.Commit{}, false, nil // SHA-256 objects: not built here
	}
	entries, err := c.treeEntries(ctx, p.Parent.Tree)
	if err != nil {
		return forge.Commit{}, false, err
	}
	objects, tree, err := buildTrees(entries, p.Files)
	if err != nil {
		return forge.Commit{}, false, err
	}
	// As the contents API writes it: the message trimmed, one final newline,
	// the bot as author and committer, now.
	message := strings.TrimSpace(p.Message) + "\n"
	stamp := strconv.FormatInt(time.Now().Unix(), 10) + " +0000"
	sig := c.bot.Name + " <" + c.bot.Email + "> " + stamp
	commit := gitObject{kind: 1, body: []byte("tree " + tree + "\nparent " + p.Parent.SHA +
		"\nauthor " + sig + "\ncommitter " + sig + "\n\n" + message)}
	objects = append(objects, commit)
	sha := commit.name()

	old := zeroSHA
	if p.Exists {
		old = p.ExpectedHead
	}
	ref := "refs/heads/" + p.Branch
	var body bytes.Buffer
	writePktLine(&body, old+" "+sha+" "+ref+"\x00report-status agent=nudgeflow\n")
	body.WriteString("0000")
	if err := writePack(&body, objects); err != nil {
		return forge.Commit{}, false, err
	}
	endpoint := c.repo.Scheme + "://" + c.repo.Host + "/" + url.PathEscape(c.repo.Owner) + "/" + url.PathEscape(c.repo.Name) + ".git/git-receive-pack"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, &body)
	if err != nil {
		return forge.Commit{}, false, err
	}
	req.Header.Set("Content-Type", "application/x-git-receive-pack-request")
	req.Header.Set("Accept", "application/x-git-receive-pack-result")
	op := "pushing branch " + p.Branch + " over git"
	resp, err := c.hc.Do(req)
	if err != nil {
		return forge.Commit{}, false, classify(op, err, nil)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-git-receive-pack-result") {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		switch resp.StatusCode {
		case http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
			// No receive-pack answered (git over HTTP disabled, a server without
			// git): nothing is written; the API path serves the push.
			return forge.Commit{}, false, nil
		}
		msg := strings.TrimSpace(string(data))
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		return forge.Commit{}, false, classify(op, fmt.Errorf("%s", msg), &gitea.Response{Response: resp})
	}
	status, err := readReportStatus(resp.Body, ref)
	if err != nil {
		return forge.Commit{}, true, classify(op, err, nil)
	}
	if status != "" {
		// Refused: a ref that moved (or a branch that exists, when creating) is
		// ErrHeadMoved; anything else (a hook's refusal) is the server's answer.
		now, ok, rerr := c.BranchHead(ctx, p.Branch)
		if rerr == nil && (p.Exists && (!ok || now.SHA != p.ExpectedHead) || !p.Exists && ok) {
			return forge.Commit{}, true, forge.ErrHeadMoved
		}
		return forge.Commit{}, true, temporal.NewApplicationError(fmt.Sprintf("%s: the forge refused the ref update: %s", op, forge.Truncate(status)), "ForgejoPushRefused")
	}
	who := forge.Signature{Name: c.bot.Name, Email: c.bot.Email}
	return forge.Commit{SHA: sha, Tree: tree, Parents: []string{p.Parent.SHA}, Message: message, Author: who, Committer: who}, true, nil
}

// buildTrees returns the new blobs and trees that put files into the tree
// listed by entries, and the new root tree's SHA. A file keeps
// its mode; a new one is a regular file (100644), in new directories if need be.
func buildTrees(entries []gitea.GitEntry, files map[string][]byte) ([]gitObject, string, error) {
	dirs := map[string][]treeEntry{"": nil}
	for _, e := range entries {
		dir, name := path.Split(e.Path)
		dir = strings.TrimSuffix(dir, "/")
		dirs[dir] = append(dirs[dir], treeEntry{mode: strings.TrimLeft(e.Mode, "0"), name: name, sha: e.SHA})
		if e.Type == "tree" {
			if _, ok := dirs[e.Path]; !ok {
				dirs[e.Path] = nil
			}
		}
	}
	var objects []gitObject
	dirty := map[string]bool{"": true}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		blob := gitObject{kind: 3, body: files[p]}
		objects = append(objects, blob)
		dir, name := path.Split(p)
		dir = strings.TrimSuffix(dir, "/")
		if name == "" || strings.HasPrefix(p, "/") {
			return nil, "", temporal.NewNonRetryableApplicationError("file path "+p+" is not a file", "InvalidPath", nil)
		}
		setEntry(dirs, dir, treeEntry{mode: "100644", name: name, sha: blob.name()}, true)
		// Every directory up to the root changes; a missing one is created.
		for d := dir; d != ""; {
			dirty[d] = true
			parent, base := path.Split(d)
			parent = strings.TrimSuffix(parent, "/")
			if _, ok := dirs[d]; !ok {
				dirs[d] = nil
			}
			setEntry(dirs, parent, treeEntry{mode: "40000", name: base, sha: ""}, false)
			d = parent
		}
	}
	// Deepest first, so each parent takes its children's new names.
	order := make([]string, 0, len(dirty))
	for d := range dirty {
		order = append(order, d)
	}
	depth := func(d string) int {
		if d == "" {
			return 0 // the root, last
		}
		return strings.Count(d, "/") + 1
	}
	slices.SortFunc(order, func(a, b string) int { return depth(b) - depth(a) })
	shas := map[string]string{}
	for _, d := range order {
		list := dirs[d]
		for i, e := range list {
			child := path.Join(d, e.name)
			if s, ok := shas[child]; ok && e.mode == "40000" {
				list[i].sha = s
			}
			if list[i].sha == "" {
				return nil, "", fmt.Errorf("tree %s: entry %s has no object", d, e.name)
			}
		}
		t := gitObject{kind: 2, body: encodeTree(list)}
		shas[d] = t.name()
		objects = append(objects, t)
	}
	return objects, shas[""], nil
}

// setEntry puts e into dir's list. A file already there takes e's blob and
// keeps its mode; a directory already there keeps its entry (its new name is
// set when the directory's tree is built).
func setEntry(dirs map[string][]treeEntry, dir string, e treeEntry, file bool) {
	list := dirs[dir]
	for i := range list {
		if list[i].name == e.name {
			if file {
				list[i].sha = e.sha // the file's mode (say 100755) stays
			}
			return // a directory already listed: its name is set when built
		}
	}
	dirs[dir] = append(list, e)
}

// encodeTree is a tree object's body, entries in git's order (a directory sorts
// as its name with a trailing slash).
func encodeTree(list []treeEntry) []byte {
	key := func(e treeEntry) string {
		if e.mode == "40000" {
			return e.name + "/"
		}
		return e.name
	}
	slices.SortFunc(list, func(a, b treeEntry) int { return strings.Compare(key(a), key(b)) })
	var b bytes.Buffer
	for _, e := range list {
		raw, _ := hex.DecodeString(e.sha)
		b.WriteString(e.mode + " " + e.name + "\x00")
		b.Write(raw)
	}
	return b.Bytes()
}

// writePktLine writes one pkt-line (four hex digits of length, then the data).
func writePktLine(w *bytes.Buffer, s string) {
	fmt.Fprintf(w, "%04x%s", len(s)+4, s)
}

// writePack writes a version 2 pack of the objects, undeltified.
func writePack(w io.Writer, objects []gitObject) error {
	h := sha1.New()
	out := io.MultiWriter(w, h)
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(objects)))
	if _, err := out.Write(hdr[:]); err != nil {
		return err
	}
	for _, o := range objects {
		// Type and size: the first byte holds the type and four bits of the size,
		// each following byte seven more, the high bit saying one more follows.
		size := len(o.body)
		b := byte(o.kind<<4) | byte(size&0x0f)
		size >>= 4
		var head []byte
		for size > 0 {
			head = append(head, b|0x80)
			b = byte(size & 0x7f)
			size >>= 7
		}
		head = append(head, b)
		if _, err := out.Write(head); err != nil {
			return err
		}
		z := zlib.NewWriter(out)
		if _, err := z.Write(o.body); err != nil {
			return err
		}
		if err := z.Close(); err != nil {
			return err
		}
	}
	_, err := w.Write(h.Sum(nil))
	return err
}

// readReportStatus reads receive-pack's report: "" when ref was updated, else
// the reason it was not.
func readReportStatus(r io.Reader, ref string) (string, error) {
	br := bufio.NewReader(r)
	unpacked, updated := false, false
	for {
		var n [4]byte
		if _, err := io.ReadFull(br, n[:]); err != nil {
			if err == io.EOF && unpacked && updated {
				return "", nil
			}
			return "", fmt.Errorf("reading the push's report: %w", err)
		}
		size, err := strconv.ParseUint(string(n[:]), 16, 16)
		if err != nil {
			return "", fmt.Errorf("the push's report is not pkt-lines")
		}
		if size == 0 {
			break // flush: the report's end
		}
		if size < 4 {
			return "", fmt.Errorf("the push's report is not pkt-lines")
		}
		line := make([]byte, size-4)
		if _, err := io.ReadFull(br, line); err != nil {
			return "", fmt.Errorf("reading the push's report: %w", err)
		}
		s := strings.TrimSuffix(string(line), "\n")
		switch {
		case s == "unpack ok":
			unpacked = true
		case strings.HasPrefix(s, "unpack "):
			return "", fmt.Errorf("the forge could not unpack the push: %s", forge.Truncate(strings.TrimPrefix(s, "unpack ")))
		case s == "ok "+ref:
			updated = true
		case strings.HasPrefix(s, "ng "+ref+" "):
			if !unpacked {
				return "", fmt.Errorf("the push's report refused %s before unpacking", ref)
			}
			return strings.TrimPrefix(s, "ng "+ref+" "), nil
		}
	}
	if !unpacked || !updated {
		return "", fmt.Errorf("the push's report says no update of %s", ref)
	}
	return "", nil
}
