package konflux

import (
	"cmp"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
)

// BuildOf is the build a succeeded build PipelineRun pushed, every field filled
// here, once: the bridge reads the run and the build travels whole from then on.
// ok is false when the run reported no IMAGE_URL or IMAGE_DIGEST.
func BuildOf(plr *tektonv1.PipelineRun) (b imagebuild.Build, ok bool) {
	imageURL, digest := BuildResults(plr)
	if imageURL == "" || digest == "" {
		return imagebuild.Build{}, false
	}
	b = imagebuild.Build{
		Image: digestref.Repository(imageURL), ImageURL: imageURL, Digest: digest, PullSpec: digestref.PullSpec(imageURL, digest),
		BuildPipelineRun: plr.Name, BuildUID: string(plr.UID), BuiltAt: plr.CreationTimestamp.UTC(),
		CommitSHA: commitSHA(plr), RepoAtSHA: SourceLink(plr.Annotations, ""), NudgeFiles: NudgeFilesKey.Get(plr.Annotations),
	}
	if plr.Status.StartTime != nil {
		b.BuiltAt = plr.Status.StartTime.UTC()
	}
	return b, true
}

// BuildOfImage is the build an image reference names when no build run can be
// read (a Component's lastPromotedImage): the image and its digest, nothing of a run.
func BuildOfImage(ref string) imagebuild.Build {
	r := digestref.ParseReference(ref)
	return imagebuild.Build{Image: r.Repository, ImageURL: r.Tagged(), Digest: r.Digest, PullSpec: digestref.PullSpec(r.Repository, r.Digest)}
}

// commitSHA is the source commit a run built: Pipelines as Code's key, else
// Konflux's, each on the annotations, else on the labels.
func commitSHA(plr *tektonv1.PipelineRun) string {
	for _, k := range append([]string{AnnotationPaCSHA}, CommitSHAKey.Forms()...) {
		for _, m := range []map[string]string{plr.Annotations, plr.Labels} {
			if v := strings.TrimSpace(m[k]); v != "" {
				return v
			}
		}
	}
	return ""
}

// CompleteLegacy is the one fallback for a build signalled before builds were
// carried whole (b.Legacy()): such a build may have kept only its digest, its pull
// spec or image, and its run. Each field it lacks, and only those, is filled: from
// its build run when that could still be read (plr non-nil, the run b names):
// IMAGE_URL when the run's digest is b's, the UID, the commit, the repo-at-commit
// link and the nudge files; else from what it has: Image from the pull spec, the
// pull spec from Image and Digest, ImageURL from either (without a tag). A build
// that is not Legacy is returned as it is: new builds are never derived or read again.
func CompleteLegacy(b imagebuild.Build, plr *tektonv1.PipelineRun) imagebuild.Build {
	if !b.Legacy() {
		return b
	}
	if plr != nil {
		if run, ok := BuildOf(plr); ok && run.Digest == b.Digest {
			b.ImageURL = cmp.Or(b.ImageURL, run.ImageURL)
		}
		b.BuildUID = cmp.Or(b.BuildUID, string(plr.UID))
		b.CommitSHA = cmp.Or(b.CommitSHA, commitSHA(plr))
		b.RepoAtSHA = cmp.Or(b.RepoAtSHA, SourceLink(plr.Annotations, ""))
		b.NudgeFiles = cmp.Or(b.NudgeFiles, NudgeFilesKey.Get(plr.Annotations))
	}
	ref := digestref.ParseReference(b.PullSpec)
	b.Image = cmp.Or(b.Image, ref.Repository)
	if b.PullSpec == "" && b.Image != "" && b.Digest != "" {
		b.PullSpec = digestref.PullSpec(b.Image, b.Digest)
	}
	b.ImageURL = cmp.Or(b.ImageURL, ref.Tagged(), b.Image)
	return b
}
