// Package imagebuild is the one value of "a succeeded build of a component": the
// image it pushed and the PipelineRun that pushed it. Every signal, request and state that
// carries a build embeds Build (Go struct embedding), so a build travels whole from
// where its PipelineRun is read (konflux.BuildOf) to the forge commit, and no one
// downstream derives a field again or reads the PipelineRun a second time.
//
// The JSON names are the ones every carrier used before it embedded Build: stored
// workflow histories and states decode unchanged. Builds signalled before Build was
// carried whole lack some fields (see Legacy).
package imagebuild

import "time"

// Build is a succeeded build of one component (the carrier names which). No secrets:
// everything here is on the PipelineRun or in the registry for anyone to read.
type Build struct {
	// Image is the image repository (no tag, no digest); ImageURL is IMAGE_URL
	// (repository, with the build's tag); Digest is IMAGE_DIGEST (sha256:<hex>);
	// PullSpec pins Image to Digest (repository@digest), the reference nudges write.
	Image    string `json:"image,omitempty"`
	ImageURL string `json:"imageURL,omitempty"`
	Digest   string `json:"digest"`
	PullSpec string `json:"pullSpec,omitempty"`
	// BuildPipelineRun names the build's PipelineRun; BuildUID is its UID, which
	// keys the Nudge of the build (one per build and target).
	BuildPipelineRun string `json:"buildPipelineRun,omitempty"`
	BuildUID         string `json:"buildUID,omitempty"`
	// BuiltAt orders builds of one component: the run's start (its creation when it
	// has not recorded one). An older build never replaces a newer one.
	BuiltAt time.Time `json:"builtAt,omitempty"`
	// CommitSHA is the source commit built; RepoAtSHA the repo-at-commit link;
	// NudgeFiles the build's build-nudge-files (which files a nudge may edit).
	CommitSHA  string `json:"commitSHA,omitempty"`
	RepoAtSHA  string `json:"repoAtSHA,omitempty"`
	NudgeFiles string `json:"nudgeFiles,omitempty"`
}

// Legacy reports a build signalled before builds were carried whole: it lacks one
// of the image fields konflux.BuildOf (and konflux.BuildOfImage, when the run is
// gone) always fills: Image, ImageURL, PullSpec. Only such a build is completed, by
// konflux.CompleteLegacy; a build that is not Legacy is used as it came.
func (b Build) Legacy() bool { return b.Image == "" || b.ImageURL == "" || b.PullSpec == "" }
