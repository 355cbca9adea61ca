package changegrouppr

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/prbody"
	"github.com/nudgeflow/nudgeflow/internal/releases"
)

// desired is the tree the branch must hold: the base tree with every ready digest.
type desired struct {
	base       forge.Commit
	baseBranch string
	changes    map[string][]byte
	before     map[string]string // the changed files' contents before
	files      map[string]string // path -> blob SHA of the whole desired tree
	// refs are, per row, the repositories referenced in the matched files (the
	// built one and its distribution repositories), in the row's order.
	refs map[string][]string
	// tree, when set, is an existing tree holding exactly the desired files.
	tree string
}

// rowRewriters are the rewriters of one row: its built repository first, then the
// repositories it is released to.
type rowRewriters struct {
	row   changegroupprapi.Row
	repos []string
	rw    []*digestref.Rewriter
	apply bool // the row is ready: its references are rewritten, not only counted
}

// placeholderDigest counts references of rows that have no new digest yet.
var placeholderDigest = "sha256:" + strings.Repeat("0", 64)

func (a *Activities) desiredTree(ctx context.Context, f forge.Forge, req changegroupprapi.SyncRequest, base forge.Commit) (desired, error) {
	d := desired{base: base, changes: map[string][]byte{}, before: map[string]string{}, files: map[string]string{}, refs: map[string][]string{}}
	m, _ := digestref.NewFileMatcher(req.FileMatch) // validated
	rows, err := a.rewriters(ctx, req)
	if err != nil {
		return d, err
	}
	files, err := f.Files(ctx, base.Tree)
	if err != nil {
		return d, err
	}
	found := map[string]map[string]bool{}
	considered := 0
	for _, file := range files {
		d.files[file.Path] = file.SHA
		if len(rows) == 0 || !m.Match(file.Path) || file.Mode == "120000" || file.Mode == "160000" {
			continue
		}
		if considered++; considered%100 == 0 && activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, file.Path) // a big tree: still working
		}
		text, ok, err := referenceText(ctx, f, file.SHA)
		if err != nil {
			return d, err
		}
		if !ok {
			continue // binary, or holds no digest reference at all
		}
		original := text
		for _, r := range rows {
			for i, rw := range r.rw {
				rewritten, n := rw.Rewrite(text)
				if n == 0 {
					continue
				}
				if found[r.row.Component] == nil {
					found[r.row.Component] = map[string]bool{}
				}
				found[r.row.Component][r.repos[i]] = true
				if r.apply {
					text = rewritten
				}
			}
		}
		if text != original {
			d.changes[file.Path] = []byte(text)
			d.before[file.Path] = original
			d.files[file.Path] = gitBlobSHA([]byte(text))
		}
	}
	for _, r := range rows {
		for _, repo := range r.repos {
			if found[r.row.Component][repo] {
				d.refs[r.row.Component] = append(d.refs[r.row.Component], repo)
			}
		}
	}
	return d, nil
}

// rewriters builds, per row with a valid image, the rewriters of its built
// repository and of its distribution repositories (ReleasePlanAdmissions): an OLM
// bundle references operands by where they are released, not where they were built.
func (a *Activities) rewriters(ctx context.Context, req changegroupprapi.SyncRequest) ([]rowRewriters, error) {
	var names []string
	for _, r := range req.Rows {
		names = append(names, r.Component)
	}
	dist, problems, err := releases.Repositories(ctx, a.k8s, req.Repo.Namespace, names...)
	if err != nil {
		return nil, err
	}
	for _, p := range problems {
		activity.GetLogger(ctx).Warn("a ReleasePlanAdmission could not be read; its repositories are not rewritten", "admission", p.Admission, "error", p.Err)
	}
	var out []rowRewriters
	for _, r := range req.Rows {
		if r.State == prbody.StateDropped || !digestref.ValidImage(r.Image) {
			continue
		}
		apply := r.State == prbody.StateReady && r.New != ""
		digest := r.New
		if !apply {
			digest = placeholderDigest
		}
		rr := rowRewriters{row: r, apply: apply}
		for _, repo := range append([]string{r.Image}, dist[r.Component]...) {
			if slices.Contains(rr.repos, repo) {
				continue
			}
			rw, err := digestref.NewRewriter(repo, digest)
			if err != nil {
				activity.GetLogger(ctx).Warn("a distribution repository is not a valid image repository; skipped", "component", r.Component, "repository", repo)
				continue
			}
			rr.repos, rr.rw = append(rr.repos, repo), append(rr.rw, rw)
		}
		out = append(out, rr)
	}
	return out, nil
}

// blobCache remembers, per blob SHA (content-addressed, so valid across repositories
// and syncs), whether a blob can hold a digest reference and, if so, its text: a
// re-sync of the same tree reads no blob again.
var blobCache = struct {
	sync.Mutex
	m map[string]*string // nil value: no reference possible
}{m: map[string]*string{}}

// maxCachedBlobs bounds the cache; it starts afresh when full.
const maxCachedBlobs = 50000

// referenceText returns a blob's text when it can hold a digest reference
// ("@sha256:"), reading it only the first time the blob is seen.
func referenceText(ctx context.Context, f forge.Forge, sha string) (string, bool, error) {
	blobCache.Lock()
	v, seen := blobCache.m[sha]
	blobCache.Unlock()
	if seen {
		if v == nil {
			return "", false, nil
		}
		return *v, true, nil
	}
	content, err := f.Blob(ctx, sha)
	if err != nil {
		return "", false, err
	}
	var entry *string
	if utf8.Valid(content) && strings.Contains(string(content), "@sha256:") {
		text := string(content)
		entry = &text
	}
	blobCache.Lock()
	if len(blobCache.m) >= maxCachedBlobs {
		blobCache.m = map[string]*string{}
	}
	blobCache.m[sha] = entry
	blobCache.Unlock()
	if entry == nil {
		return "", false, nil
	}
	return *entry, true, nil
}

// holds reports whether commit c carries exactly the desired tree on some base.
func holds(ctx context.Context, f forge.Forge, c forge.Commit, d desired) (bool, error) {
	files, err := f.Files(ctx, c.Tree)
	if err != nil {
		return false, err
	}
	if len(files) != len(d.files) {
		return false, nil
	}
	for _, file := range files {
		if d.files[file.Path] != file.SHA {
			return false, nil
		}
	}
	return true, nil
}

// gitBlobSHA is git's object name of a blob, so desired trees are compared without
// writing anything.
func gitBlobSHA(content []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}
