// Package digestref splits image references into repository, tag and digest, selects
// the files of a repository that may hold image references (Renovate's fileMatch
// semantics) and rewrites `<repo>(:tag)?@sha256:<hex>` references of one image
// repository to a new digest.
//
// Everything here handles untrusted input (repository files, regexes
// from ConfigMaps) and never panics on it.
package digestref

import (
	"fmt"
	"regexp"
	"strings"
)

// DefaultFileMatch is build-service's default when neither the ConfigMap nor the
// PipelineRun annotation names files.
var DefaultFileMatch = []string{`.*Dockerfile.*`, `.*.yaml`, `.*Containerfile.*`}

// FileMatcher selects repository-relative paths by Renovate fileMatch regexes: a path
// is selected when any regex matches anywhere in it (RegExp.test, not a full match).
type FileMatcher struct{ res []*regexp.Regexp }

// NewFileMatcher compiles patterns; no pattern (or only blank ones) means DefaultFileMatch.
func NewFileMatcher(patterns []string) (*FileMatcher, error) {
	var res []*regexp.Regexp
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("fileMatch %q: %w", p, err)
		}
		res = append(res, re)
	}
	if len(res) == 0 {
		for _, p := range DefaultFileMatch {
			res = append(res, regexp.MustCompile(p))
		}
	}
	return &FileMatcher{res: res}, nil
}

// Match reports whether path is selected.
func (m *FileMatcher) Match(path string) bool {
	for _, re := range m.res {
		if re.MatchString(path) {
			return true
		}
	}
	return false
}

// Reference is an image reference split into its parts:
// `<Repository>(:<Tag>)?(@<Digest>)?`. The repository keeps a registry port.
type Reference struct {
	Repository, Tag, Digest string
}

// ParseReference splits ref. The digest is what follows the "@"; the tag is what
// follows the last ":" after the last "/", so the port of a registry host
// (registry:5000/org/img) is never mistaken for a tag. It does not validate: see
// ValidImage and ValidDigest for untrusted input.
func ParseReference(ref string) Reference {
	name, digest, _ := strings.Cut(ref, "@")
	r := Reference{Repository: name, Digest: digest}
	if colon := strings.LastIndex(name, ":"); colon > strings.LastIndex(name, "/") {
		r.Repository, r.Tag = name[:colon], name[colon+1:]
	}
	return r
}

// Tagged is the reference without its digest: `<Repository>(:<Tag>)?`.
func (r Reference) Tagged() string {
	if r.Tag == "" {
		return r.Repository
	}
	return r.Repository + ":" + r.Tag
}

// Repository is the image repository of ref, without tag or digest.
func Repository(ref string) string { return ParseReference(ref).Repository }

// PullSpec pins the repository of image (any tag or digest dropped) to digest:
// `<repository>@<digest>`, the reference nudges write.
func PullSpec(image, digest string) string { return Repository(image) + "@" + digest }

var (
	digestRE = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
	// An image repository: registry host (optionally with port) and path components.
	imageRE = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)+$`)
)

// ValidDigest reports whether d is a full sha256 digest (sha256:<64 lowercase hex>).
func ValidDigest(d string) bool { return digestRE.MatchString(d) }

// ValidImage reports whether image is an image repository without tag or digest.
func ValidImage(image string) bool { return len(image) <= 512 && imageRE.MatchString(image) }

// Rewriter rewrites references of one image repository.
type Rewriter struct {
	re     *regexp.Regexp
	digest string
}

// NewRewriter returns a Rewriter that points every `<image>(:tag)?@sha256:<hex>` at
// digest. It refuses an image that is not a plain repository or a malformed digest.
func NewRewriter(image, digest string) (*Rewriter, error) {
	if !ValidImage(image) {
		return nil, fmt.Errorf("image repository %q is not valid", image)
	}
	if !ValidDigest(digest) {
		return nil, fmt.Errorf("digest %q is not sha256:<64 hex>", digest)
	}
	// Group 1: what precedes the reference, which must not continue an image name
	// (so registry.quay.io/org/op is not quay.io/org/op). Group 2: the optional tag.
	// After the image only ':' or '@' may follow, so quay.io/org/op never matches
	// quay.io/org/operand. The digest must end at a word boundary.
	re := regexp.MustCompile(`(^|[^A-Za-z0-9._/-])` + regexp.QuoteMeta(image) +
		`(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?@sha256:[a-f0-9]{64}\b`)
	return &Rewriter{re: re, digest: digest}, nil
}

// Rewrite returns content with every reference rewritten and how many references it
// found (including those already at the digest). The tag is kept.
func (r *Rewriter) Rewrite(content string) (string, int) {
	n := 0
	out := r.re.ReplaceAllStringFunc(content, func(m string) string {
		n++
		at := strings.LastIndex(m, "@sha256:")
		return m[:at] + "@" + r.digest
	})
	return out, n
}

// Short abbreviates a digest for display: sha256: and the first 12 hex characters.
// Anything that is not a sha256 digest is cut to at most 19 characters.
func Short(d string) string {
	const keep = len("sha256:") + 12
	if len(d) > keep {
		return d[:keep]
	}
	return d
}
