package prgroup

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/contracts/prgroupapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/pathfilter"
)

// Pipelines as Code's annotations of a PipelineRun in `.tekton/`.
const (
	annotationOnCELExpression = konflux.AnnotationOnCEL
	annotationOnEvent         = konflux.AnnotationOnEvent
	tektonDir                 = ".tekton/"
)

// synthetic is ADR 29's synthetic commit: the originating PRs' changes that the
// target's pull-request pipeline matches, copied at their heads.
type synthetic struct {
	// files: path -> content at the originating PR's head; blobs: path -> blob SHA.
	files map[string][]byte
	blobs map[string]string
	// copied lists, per originating PR, the paths copied from it (the description).
	copied []copied
	// notes say what was not copied and why.
	notes   []string
	message string
}

type copied struct {
	origin, sha string
	paths       []string
}

func (s synthetic) empty() bool { return len(s.files) == 0 }

// gitBlobSHA is git's blob name of content (what every forge's tree lists).
func gitBlobSHA(content []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

type pipelineRunDoc struct {
	Kind     string            `json:"kind"`
	Metadata metav1.ObjectMeta `json:"metadata"`
}

// pullRequestPipeline finds the target's pull-request PipelineRun in `.tekton/` at
// the base: labelled with the component, and running on pull_request (its on-event
// names it, or its on-cel-expression does, or names no event at all). It returns
// the file and the PipelineRun's annotations.
func pullRequestPipeline(ctx context.Context, f forge.Forge, baseFiles []forge.File, target string) (string, map[string]string, error) {
	type candidate struct {
		path        string
		annotations map[string]string
		rank        int
	}
	var found []candidate
	for _, file := range baseFiles {
		if !strings.HasPrefix(file.Path, tektonDir) || !(strings.HasSuffix(file.Path, ".yaml") || strings.HasSuffix(file.Path, ".yml")) {
			continue
		}
		content, err := f.Blob(ctx, file.SHA)
		if err != nil {
			return "", nil, err
		}
		dec := k8syaml.NewYAMLOrJSONDecoder(bytes.NewReader(content), 4096)
		for {
			var doc pipelineRunDoc
			if err := dec.Decode(&doc); err != nil {
				break // the end, or not YAML PaC would read either: the other files
			}
			if doc.Kind != "PipelineRun" || konflux.ComponentOf(doc.Metadata.Labels) != target {
				continue
			}
			ann := doc.Metadata.Annotations
			onEvent, cel := ann[annotationOnEvent], ann[annotationOnCELExpression]
			rank := 0
			switch {
			case strings.Contains(onEvent, "pull_request") || strings.Contains(cel, `"pull_request"`) || strings.Contains(cel, `'pull_request'`):
				rank = 2
			case onEvent == "" && cel != "" && !strings.Contains(cel, "push"):
				rank = 1
			}
			if rank > 0 {
				found = append(found, candidate{file.Path, ann, rank})
			}
		}
	}
	if len(found) == 0 {
		return "", nil, nil
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].rank > found[j].rank })
	return found[0].path, found[0].annotations, nil
}

// synthesize decides ADR 29's synthetic commit for the open originating PRs in the
// target's repository. It never fails for what it cannot do: it says so in notes.
func (a *Activities) synthesize(ctx context.Context, f forge.Forge, repo changegroupprapi.Repo, req prgroupapi.SyncRequest, baseBranch string, baseFiles []forge.File) (synthetic, error) {
	syn := synthetic{files: map[string][]byte{}, blobs: map[string]string{}}
	var origins []prgroupapi.Origin
	for _, o := range req.Origins {
		if sameRepo(o.Key, repo.URL) && (o.State == "Open" || o.State == "Unknown" || o.State == "") {
			origins = append(origins, o)
		}
	}
	if len(origins) == 0 {
		return syn, nil
	}
	skip := func(why string) (synthetic, error) {
		syn.notes = append(syn.notes, "ADR 29's synthetic commit (a copy of the originating pull request's changes that "+
			req.Target+"'s pull-request pipeline matches) is not made: "+why+". Only the digests are updated.")
		return syn, nil
	}
	lister, ok := f.(forge.PRFilesLister)
	if !ok {
		return skip("this forge client cannot list a pull request's changed files")
	}
	path, ann, err := pullRequestPipeline(ctx, f, baseFiles, req.Target)
	if err != nil {
		return syn, err
	}
	if path == "" {
		return skip(fmt.Sprintf("no pull-request PipelineRun labelled `%s: %s` was found in `.tekton/` on %s", konflux.LabelComponent, req.Target, baseBranch))
	}
	expr := strings.TrimSpace(ann[annotationOnCELExpression])
	var filter *pathfilter.Filter
	if expr == "" {
		syn.notes = append(syn.notes, fmt.Sprintf("`%s` has no `%s` (only `%s`): Pipelines as Code builds it on any change, so every file the originating pull request changed is copied.",
			path, annotationOnCELExpression, annotationOnEvent))
	} else if filter, err = pathfilter.Compile(expr); err != nil {
		return skip(fmt.Sprintf("the `%s` of `%s` cannot be evaluated (%v)", annotationOnCELExpression, path, err))
	}
	eventType := "pull_request"
	if repo.Provider == forge.ProviderGitLab {
		eventType = "Merge Request"
	}
	ev := pathfilter.Event{Event: "pull_request", EventType: eventType, Title: title(req), TargetBranch: baseBranch,
		SourceBranch: req.Branch, TargetURL: repo.URL, SourceURL: repo.URL}
	taken := map[string]string{} // path -> origin
	for _, o := range origins {
		_, n, _ := strings.Cut(o.Key, "#")
		number, _ := strconv.Atoi(n)
		pr, found, err := f.FindPR(ctx, "", number)
		if err != nil {
			return syn, err
		}
		if !found || !pr.Open {
			continue
		}
		changed, err := lister.PRFiles(ctx, number)
		if err != nil {
			return syn, err
		}
		files := make([]pathfilter.File, 0, len(changed))
		for _, c := range changed {
			files = append(files, pathfilter.File{Path: c.Path, Status: c.Status})
		}
		matched := files
		if filter != nil {
			if matched, err = filter.Match(ev, files); err != nil {
				return skip(fmt.Sprintf("the `%s` of `%s` cannot be evaluated (%v)", annotationOnCELExpression, path, err))
			}
		}
		if len(matched) == 0 {
			continue
		}
		head, err := f.Commit(ctx, pr.HeadSHA)
		if err != nil {
			return syn, err
		}
		headFiles, err := f.Files(ctx, head.Tree)
		if err != nil {
			return syn, err
		}
		byPath := map[string]forge.File{}
		for _, hf := range headFiles {
			byPath[hf.Path] = hf
		}
		c := copied{origin: o.Key, sha: pr.HeadSHA}
		for _, m := range matched {
			hf, present := byPath[m.Path]
			switch {
			case m.Status == forge.ChangeRemoved || !present:
				syn.notes = append(syn.notes, fmt.Sprintf("`%s` was deleted by %s: deletions are not copied.", m.Path, o.Key))
				continue
			case hf.Mode == "120000" || hf.Mode == "160000":
				syn.notes = append(syn.notes, fmt.Sprintf("`%s` of %s is a symbolic link or submodule: not copied.", m.Path, o.Key))
				continue
			case taken[m.Path] != "":
				syn.notes = append(syn.notes, fmt.Sprintf("`%s` is changed by both %s and %s: the copy is %s's.", m.Path, taken[m.Path], o.Key, taken[m.Path]))
				continue
			}
			content, err := f.Blob(ctx, hf.SHA)
			if err != nil {
				return syn, err
			}
			if !utf8.Valid(content) {
				syn.notes = append(syn.notes, fmt.Sprintf("`%s` of %s is not UTF-8 text: the forge API nudgeflow pushes with cannot copy it.", m.Path, o.Key))
				continue
			}
			taken[m.Path] = o.Key
			syn.files[m.Path], syn.blobs[m.Path] = content, gitBlobSHA(content)
			c.paths = append(c.paths, m.Path)
		}
		if len(c.paths) > 0 {
			syn.copied = append(syn.copied, c)
		}
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "chore: copy the changes %s's pull-request pipeline matches for PR group %s\n\n", req.Target, req.Group)
	fmt.Fprintf(&msg, "ADR 29's synthetic commit (%s):\n", path)
	for _, c := range syn.copied {
		fmt.Fprintf(&msg, "- from %s at %.7s: %s\n", c.origin, c.sha, strings.Join(c.paths, ", "))
	}
	syn.message = msg.String()
	return syn, nil
}

func title(req prgroupapi.SyncRequest) string {
	return fmt.Sprintf("[PR group %s] Update %s", req.Group, req.Target)
}

// synthTree is the base tree with the copied files.
func (s synthetic) tree(baseFiles []forge.File) map[string]string {
	out := make(map[string]string, len(baseFiles)+len(s.blobs))
	for _, f := range baseFiles {
		out[f.Path] = f.SHA
	}
	for p, sha := range s.blobs {
		out[p] = sha
	}
	return out
}

// newPaths are the copied paths the base does not hold.
func (s synthetic) newPaths(baseFiles []forge.File) []string {
	var out []string
	for p := range s.files {
		if !slices.ContainsFunc(baseFiles, func(f forge.File) bool { return f.Path == p }) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// describe is the description's account of the synthetic commit.
func (s synthetic) describe() []string {
	var out []string
	for _, c := range s.copied {
		paths := make([]string, len(c.paths))
		for i, p := range c.paths {
			paths[i] = "`" + p + "`"
		}
		out = append(out, fmt.Sprintf("Synthetic commit (ADR 29): copied from %s at `%.7s`: %s. The digest commit sits on top of it.",
			c.origin, c.sha, strings.Join(paths, ", ")))
	}
	return append(out, s.notes...)
}
