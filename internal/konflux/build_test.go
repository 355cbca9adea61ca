package konflux

import (
	"testing"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
)

func buildRun() *tektonv1.PipelineRun {
	plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "a-on-push-1", UID: "uid-1",
		Annotations: map[string]string{AnnotationPaCSHA: "abc123", AnnotationPaCRepoURL: "https://forge/org/a.git", NudgeFilesKey.New: ".*Dockerfile"}}}
	started := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	SucceededBuild{ImageURL: "registry.local:5000/org/a:on-push-abc123", Digest: "sha256:1111", Started: started, Completed: started}.WriteStatus(plr)
	return plr
}

// BuildOf fills every field of the build from its run, once.
func TestBuildOfFillsEveryField(t *testing.T) {
	b, ok := BuildOf(buildRun())
	want := imagebuild.Build{Image: "registry.local:5000/org/a", ImageURL: "registry.local:5000/org/a:on-push-abc123", Digest: "sha256:1111",
		PullSpec: "registry.local:5000/org/a@sha256:1111", BuildPipelineRun: "a-on-push-1", BuildUID: "uid-1",
		BuiltAt: time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC), CommitSHA: "abc123", RepoAtSHA: "https://forge/org/a?rev=abc123", NudgeFiles: ".*Dockerfile"}
	if !ok || b != want {
		t.Fatalf("BuildOf = %+v, %v\nwant %+v", b, ok, want)
	}
	if b.Legacy() {
		t.Fatal("a build BuildOf made is not legacy")
	}
	if _, ok := BuildOf(&tektonv1.PipelineRun{}); ok {
		t.Fatal("a run without results has no build")
	}
}

// CompleteLegacy fills only what a build signalled before builds were carried
// whole lacks, and leaves a build BuildOf made as it came.
func TestCompleteLegacyFillsOnlyWhatIsMissing(t *testing.T) {
	whole, _ := BuildOf(buildRun())
	if got := CompleteLegacy(whole, &tektonv1.PipelineRun{}); got != whole {
		t.Fatalf("a whole build was changed: %+v", got)
	}
	old := imagebuild.Build{Digest: "sha256:1111", PullSpec: "registry.local:5000/org/a@sha256:1111", BuildPipelineRun: "a-on-push-1"}
	got := CompleteLegacy(old, nil)
	if got.Image != "registry.local:5000/org/a" || got.ImageURL != "registry.local:5000/org/a" || got.BuildUID != "" || got.NudgeFiles != "" {
		t.Fatalf("from the pull spec alone: %+v", got)
	}
	got = CompleteLegacy(old, buildRun())
	want := whole
	want.BuiltAt = old.BuiltAt // every build was signalled with its start: it orders builds, never re-read
	if got != want {
		t.Fatalf("from the run: %+v\nwant %+v", got, want)
	}
	rebuilt := buildRun()
	SucceededBuild{ImageURL: "registry.local:5000/org/a:other", Digest: "sha256:2222"}.WriteStatus(rebuilt)
	if got := CompleteLegacy(old, rebuilt); got.ImageURL != "registry.local:5000/org/a" {
		t.Fatalf("the run reports another digest: its IMAGE_URL is not this build's, got %q", got.ImageURL)
	}
	prBuild := imagebuild.Build{Image: "quay.io/org/a", Digest: "sha256:1111"}
	if got := CompleteLegacy(prBuild, nil); got.PullSpec != "quay.io/org/a@sha256:1111" || got.ImageURL != "quay.io/org/a" {
		t.Fatalf("a build signalled with its image only: %+v", got)
	}
}
