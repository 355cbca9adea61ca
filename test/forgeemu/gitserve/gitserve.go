// Package gitserve serves the repositories of a forge emulator's gitstore over git's
// smart HTTP protocol, so that real git clients (Renovate, the git CLI) clone, fetch
// and push them.
//
// It is the system git's own server: a bare repository per emulator repository on
// disk, into which the store's objects and branches are written before each request,
// and `git http-backend` run as CGI. After a push, the new commits, trees and blobs
// are read back into the store and the ref updates are handed to the emulator
// (Forge.Pushed), which moves its branches, pull request heads and webhooks exactly
// as its REST path does.
//
// Authentication is HTTP basic with the token as password and any user name, as
// GitHub (x-access-token:<token>) and GitLab (oauth2:<token>) accept, or, on a forge
// that says so (TokenAsUserName: GitHub, not GitLab), with the token as user name
// and no password (GitHub's https://<token>@github.com/…); a request
// without one, or with a token that may not do what it asks, gets 401 with
// WWW-Authenticate: Basic, and a known token that may only read gets 403 on a push.
//
// Only branches (refs/heads/*) are served and kept as refs. Other refs a client
// pushes are not, but their objects are imported: Renovate's github platform pushes
// its commit to refs/renovate/branches/<branch>, then builds the same tree through
// the API (git/trees with the blobs' SHAs) to make a platform-signed commit. A store loaded from state saved before gitstore named
// objects by git's hashes cannot be served (its names are not git's).
package gitserve

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitstore"
)

// Access is what a token may do to a repository.
type Access int

const (
	// NoAccess: the token is unknown or may not see the repository.
	NoAccess Access = iota
	// ReadAccess: clone and fetch.
	ReadAccess
	// WriteAccess: push too.
	WriteAccess
)

// RefUpdate is one branch a push moved: Old is "" for a new branch, New "" for a
// deleted one.
type RefUpdate struct {
	Branch   string
	Old, New string
}

// Forge is what an emulator gives the server. Repository names are as they appear
// in the URL before ".git" ("owner/name", "group/sub/project").
type Forge interface {
	// Access is what token ("" for none) may do to repository name; exists is false
	// when there is no such repository.
	Access(name, token string) (access Access, exists bool)
	// WithRepo runs fn with the emulator's lock held and the repository's store;
	// it reports false, without calling fn, when there is no such repository.
	WithRepo(name string, fn func(r *gitstore.Repo)) bool
	// Pushed moves the branches of a push whose objects are already in the store,
	// as the emulator's REST path would (pull request heads, webhooks). token is the
	// pusher's.
	Pushed(name, token string, updates []RefUpdate)
}

// TokenAsUserName is implemented by a Forge that, like GitHub, takes a token given
// as the basic-auth user name with an empty password (or "x-oauth-basic"). GitLab
// does not: it reads the password only, so such a request is anonymous there.
type TokenAsUserName interface {
	TokenAsUserName() bool
}

// Server serves git for one emulator. Mount it where the forge's clone URLs point:
// it reads the repository from the request path, up to the ".git/" in it.
type Server struct {
	forge Forge
	dir   string
	git   string

	mu    sync.Mutex
	repos map[string]*bare
}

// bare is the on-disk repository of one emulator repository.
type bare struct {
	mu sync.Mutex // one git request at a time: a push reads back what it changed
	// path is the bare repository's directory; written are the objects already in it.
	path    string
	written map[string]bool
}

// New serves forge's repositories from bare repositories kept below dir (which it
// creates). It fails when there is no git on PATH.
func New(forge Forge, dir string) (*Server, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("serving git: the git CLI is needed: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("serving git: %w", err)
	}
	return &Server{forge: forge, dir: dir, git: git, repos: map[string]*bare{}}, nil
}

// Split cuts a request path "/owner/name.git/info/refs" into the repository name
// ("owner/name") and what git asks of it ("info/refs"); ok is false for any other path.
func Split(path string) (name, rest string, ok bool) {
	name, rest, ok = strings.Cut(strings.TrimPrefix(path, "/"), ".git/")
	if !ok || name == "" {
		return "", "", false
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || strings.HasPrefix(seg, ".") {
			return "", "", false
		}
	}
	return name, rest, true
}

// IsGitRequest reports whether a request path is one of git's smart HTTP requests.
func IsGitRequest(path string) bool {
	_, rest, ok := Split(path)
	return ok && (rest == "info/refs" || rest == "git-upload-pack" || rest == "git-receive-pack")
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, rest, ok := Split(r.URL.Path)
	if !ok || !IsGitRequest(r.URL.Path) {
		http.NotFound(w, r)
		return
	}
	push := rest == "git-receive-pack" || r.URL.Query().Get("service") == "git-receive-pack"
	token := basicToken(r, tokenAsUserName(s.forge))
	access, exists := s.forge.Access(name, token)
	need := ReadAccess
	if push {
		need = WriteAccess
	}
	switch {
	case access >= need:
	case access == ReadAccess && token != "":
		http.Error(w, fmt.Sprintf("Permission to %s denied.", name), http.StatusForbidden)
		return
	case !exists && token != "":
		http.Error(w, "Repository not found.", http.StatusNotFound)
		return
	default:
		w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
		http.Error(w, "Authentication required.", http.StatusUnauthorized)
		return
	}

	b, err := s.bareOf(name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	before, err := s.export(name, b)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := &cgi.Handler{
		Path: s.git,
		Args: []string{"http-backend"},
		Dir:  b.path,
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.dir,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"HOME=" + s.dir,
			"REMOTE_USER=" + "git",
		},
		InheritEnv: []string{"PATH"},
		// What http-backend says on stderr (a refused push's reason) is the
		// emulator's log, as a forge's server log would hold it.
		Stderr: os.Stderr,
	}
	// The CGI's PATH_INFO is the request path: the bare repository's, below GIT_PROJECT_ROOT.
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + name + ".git/" + rest
	h.ServeHTTP(w, r2)
	if rest != "git-receive-pack" {
		return
	}
	updates, err := s.importPush(name, b, before)
	if err != nil {
		// The client has its answer already; the emulator's log is where this shows.
		log.Printf("gitserve: reading the push to %s back: %v", name, err)
		return
	}
	if len(updates) > 0 {
		s.forge.Pushed(name, token, updates)
	}
}

// basicToken is the token of a request's basic auth: the password, or, when
// userName allows it, the user name when the password is empty or GitHub's
// "x-oauth-basic" (a clone URL of the form https://<token>@host/..., as Renovate's
// github platform writes it).
func basicToken(r *http.Request, userName bool) string {
	user, pass, _ := r.BasicAuth()
	if userName && (pass == "" || pass == "x-oauth-basic") {
		return user
	}
	return pass
}

func tokenAsUserName(f Forge) bool {
	t, ok := f.(TokenAsUserName)
	return ok && t.TokenAsUserName()
}

func (s *Server) bareOf(name string) (*bare, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.repos[name]; b != nil {
		return b, nil
	}
	path := filepath.Join(s.dir, filepath.FromSlash(name)+".git")
	if _, err := os.Stat(filepath.Join(path, "HEAD")); err != nil {
		for _, args := range [][]string{
			{"init", "--quiet", "--bare", path},
			{"-C", path, "config", "http.receivepack", "true"},
			// Pushed objects stay loose or in packs as git likes; gc never runs under us.
			{"-C", path, "config", "gc.auto", "0"},
		} {
			if out, err := exec.Command(s.git, args...).CombinedOutput(); err != nil {
				return nil, fmt.Errorf("creating the bare repository of %s: git %s: %w: %s", name, args[0], err, out)
			}
		}
	}
	b := &bare{path: path, written: map[string]bool{}}
	s.repos[name] = b
	return b, nil
}

// export writes the store's objects the bare repository lacks, then its branches
// and default branch; it returns the branches it wrote.
func (s *Server) export(name string, b *bare) (map[string]string, error) {
	objects := map[string]looseObject{}
	var branches map[string]string
	var head string
	var stale []string
	ok := s.forge.WithRepo(name, func(r *gitstore.Repo) {
		for sha, content := range r.Blobs {
			if !b.written[sha] {
				objects[sha] = looseObject{"blob", content}
			}
		}
		for sha, entries := range r.Trees {
			if b.written[sha] {
				continue
			}
			_, trees := gitstore.TreeObjects(entries)
			for tsha, body := range trees {
				objects[tsha] = looseObject{"tree", body}
			}
			// A flat tree's own name may differ from its git tree's (a store saved
			// before gitstore used git's names); marking it keeps it from being redone.
			b.written[sha] = true
		}
		for sha, c := range r.Commits {
			if b.written[sha] {
				continue
			}
			body := c.Object()
			if gitstore.ObjectSHA("commit", body) != sha {
				// Written, the object would have another name than the one the
				// branches point at: a clone would fail on a missing object.
				stale = append(stale, sha)
				continue
			}
			objects[sha] = looseObject{"commit", body}
		}
		branches = make(map[string]string, len(r.Branches))
		for br, sha := range r.Branches {
			branches[br] = sha
		}
		head = r.DefaultBranch
	})
	if !ok {
		return nil, fmt.Errorf("no repository %s", name)
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		return nil, fmt.Errorf("repository %s holds %d commits not named by git's hash (e.g. %s): state saved before gitstore used git's names cannot be served over git",
			name, len(stale), stale[0])
	}
	for sha, o := range objects {
		if b.written[sha] && o.typ != "tree" {
			continue
		}
		if err := writeLoose(b.path, o); err != nil {
			return nil, fmt.Errorf("writing %s's objects: %w", name, err)
		}
		b.written[sha] = true
	}
	if err := writeRefs(b.path, branches, head); err != nil {
		return nil, fmt.Errorf("writing %s's branches: %w", name, err)
	}
	return branches, nil
}

type looseObject struct {
	typ  string
	body []byte
}

// writeLoose stores o as git does a loose object: zlib("type size\0body") at
// objects/xx/<38 hex digits>.
func writeLoose(repo string, o looseObject) error {
	sha := gitstore.ObjectSHA(o.typ, o.body)
	path := filepath.Join(repo, "objects", sha[:2], sha[2:])
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	z := zlib.NewWriter(&buf)
	fmt.Fprintf(z, "%s %d\x00", o.typ, len(o.body))
	_, _ = z.Write(o.body)
	if err := z.Close(); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o444); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// writeRefs makes the bare repository's branches exactly branches: loose branch
// refs (a push writes them) are removed and all are written as packed-refs, and
// HEAD names the default branch.
func writeRefs(repo string, branches map[string]string, head string) error {
	if err := os.RemoveAll(filepath.Join(repo, "refs", "heads")); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(repo, "refs", "heads"), 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(branches))
	for br := range branches {
		names = append(names, br)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# pack-refs with: peeled fully-peeled sorted \n")
	for _, br := range names {
		fmt.Fprintf(&b, "%s refs/heads/%s\n", branches[br], br)
	}
	if err := os.WriteFile(filepath.Join(repo, "packed-refs"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(repo, "HEAD"), []byte("ref: refs/heads/"+head+"\n"), 0o644)
}

// importPush reads the refs after a receive-pack, reads every commit they reach
// that before's branches did not (its tree and blobs too) into the store, and
// returns how the branches moved (other refs move nothing).
func (s *Server) importPush(name string, b *bare, before map[string]string) ([]RefUpdate, error) {
	out, err := s.run(b.path, nil, "for-each-ref", "--format=%(objectname) %(refname)", "refs/")
	if err != nil {
		return nil, err
	}
	after := map[string]string{}
	var revs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		sha, ref, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if br, isBranch := strings.CutPrefix(ref, "refs/heads/"); isBranch {
			after[br] = sha
		} else if !b.written[sha] {
			revs = append(revs, sha)
		}
	}
	hidden := len(revs) > 0
	var updates []RefUpdate
	for br, sha := range after {
		if before[br] != sha {
			updates = append(updates, RefUpdate{Branch: br, Old: before[br], New: sha})
			revs = append(revs, sha)
		}
	}
	for br, sha := range before {
		if _, ok := after[br]; !ok {
			updates = append(updates, RefUpdate{Branch: br, Old: sha})
		}
		revs = append(revs, "^"+sha)
	}
	sort.Slice(updates, func(i, j int) bool { return updates[i].Branch < updates[j].Branch })
	if len(updates) == 0 && !hidden {
		return nil, nil
	}
	out, err = s.run(b.path, strings.NewReader(strings.Join(revs, "\n")+"\n"), "rev-list", "--stdin")
	if err != nil {
		return nil, err
	}
	commits := strings.Fields(string(out))

	cat, err := newCatFile(s.git, b.path)
	if err != nil {
		return nil, err
	}
	defer cat.close()
	type read struct {
		commit  *gitstore.Commit
		entries []gitstore.Entry
	}
	var reads []read
	blobs := map[string][]byte{}
	for _, sha := range commits {
		if b.written[sha] {
			continue // the store made it: a branch pushed at a commit it has
		}
		body, err := cat.read(sha, "commit")
		if err != nil {
			return nil, err
		}
		c, err := gitstore.ParseCommit(sha, body)
		if err != nil {
			return nil, err
		}
		lsTree, err := s.run(b.path, nil, "ls-tree", "-r", "-z", "--full-tree", c.Tree)
		if err != nil {
			return nil, err
		}
		var entries []gitstore.Entry
		for _, rec := range strings.Split(string(lsTree), "\x00") {
			meta, path, ok := strings.Cut(rec, "\t")
			if !ok {
				continue
			}
			f := strings.Fields(meta) // mode type sha
			if len(f) != 3 {
				return nil, fmt.Errorf("ls-tree %s: unexpected %q", c.Tree, rec)
			}
			entries = append(entries, gitstore.Entry{Path: path, Mode: f[0], SHA: f[2]})
			if f[1] == "blob" && blobs[f[2]] == nil && !b.written[f[2]] {
				if blobs[f[2]], err = cat.read(f[2], "blob"); err != nil {
					return nil, err
				}
			}
		}
		reads = append(reads, read{c, entries})
	}

	var importErr error
	ok := s.forge.WithRepo(name, func(r *gitstore.Repo) {
		for _, content := range blobs {
			r.PutBlob(content)
		}
		for _, rd := range reads {
			if tree := r.PutTree(rd.entries); tree != rd.commit.Tree {
				importErr = errors.Join(importErr, fmt.Errorf("tree %s of commit %s reads back as %s", rd.commit.Tree, rd.commit.SHA, tree))
				continue
			}
			r.Commits[rd.commit.SHA] = rd.commit
		}
	})
	if !ok {
		return nil, fmt.Errorf("repository %s is gone", name)
	}
	if importErr != nil {
		return nil, importErr
	}
	for sha := range blobs {
		b.written[sha] = true
	}
	for _, rd := range reads {
		b.written[rd.commit.SHA] = true
		b.written[rd.commit.Tree] = true
	}
	return updates, nil
}

func (s *Server) run(dir string, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := exec.Command(s.git, args...)
	cmd.Dir, cmd.Stdin = dir, stdin
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+s.dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s in %s: %w: %s", args[0], dir, err, stderr.Bytes())
	}
	return out, nil
}

// catFile is a running `git cat-file --batch`.
type catFile struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func newCatFile(git, dir string) (*catFile, error) {
	cmd := exec.Command(git, "cat-file", "--batch")
	cmd.Dir = dir
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	return &catFile{cmd: cmd, in: in, out: bufio.NewReader(out)}, nil
}

// read returns the body of object sha, which must be of type typ.
func (c *catFile) read(sha, typ string) ([]byte, error) {
	if _, err := fmt.Fprintln(c.in, sha); err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	header, err := c.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("git cat-file %s: %w", sha, err)
	}
	f := strings.Fields(header) // sha type size, or "sha missing"
	if len(f) != 3 || f[1] != typ {
		return nil, fmt.Errorf("git cat-file %s: %q, want a %s", sha, strings.TrimSpace(header), typ)
	}
	size, err := strconv.Atoi(f[2])
	if err != nil {
		return nil, fmt.Errorf("git cat-file %s: size %q", sha, f[2])
	}
	body := make([]byte, size+1) // the body and its newline
	if _, err := io.ReadFull(c.out, body); err != nil {
		return nil, fmt.Errorf("git cat-file %s: %w", sha, err)
	}
	return body[:size], nil
}

func (c *catFile) close() {
	_ = c.in.Close()
	_ = c.cmd.Wait()
}
