package konflux

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
)

// TestKeyReadsNewFirst: ADR 69 phase 1 readers take the konflux-ci.dev form when
// it is set, the appstudio form otherwise, and see objects of either model.
func TestKeyReadsNewFirst(t *testing.T) {
	for name, tc := range map[string]struct {
		labels map[string]string
		want   string
	}{
		"old only (old-model build)": {map[string]string{LabelComponent: "old"}, "old"},
		"new only (new-model build)": {map[string]string{"build.konflux-ci.dev/component": "new"}, "new"},
		"both: new wins":             {map[string]string{LabelComponent: "old", "build.konflux-ci.dev/component": "new"}, "new"},
		"new empty: old is read":     {map[string]string{LabelComponent: "old", "build.konflux-ci.dev/component": ""}, "old"},
		"neither":                    {map[string]string{"app.kubernetes.io/name": "x"}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, ComponentOf(tc.labels))
		})
	}
	_, ok := ComponentKey.Lookup(map[string]string{"build.konflux-ci.dev/component": ""})
	require.True(t, ok, "a present empty key is present")
	_, ok = ComponentKey.Lookup(nil)
	require.False(t, ok)
}

// TestKeyNewFormsAreBuildServices pins the new forms build-service writes on
// builds of konflux-ci.dev Components (BS:internal/controller/
// component_build_controller_v2.go:54-65 at ccde63a).
func TestKeyNewFormsAreBuildServices(t *testing.T) {
	require.Equal(t, "build.konflux-ci.dev/component", ComponentKey.New)
	require.Equal(t, "pipelines.konflux-ci.dev/type", PipelineTypeKey.New)
	require.Equal(t, "build.konflux-ci.dev/repo", RepoKey.New)
	require.Equal(t, "build.konflux-ci.dev/commit_sha", CommitSHAKey.New)
	require.Equal(t, "build.konflux-ci.dev/pull_request_number", PRNumberKey.New)
	require.Equal(t, "build.konflux-ci.dev/version", AnnotationVersion)
}

// TestKeySetWritesBoth: what nudgeflow writes is found by a reader of either form.
func TestKeySetWritesBoth(t *testing.T) {
	m := NudgeTypeKey.Set(nil, NudgeTypeValue)
	NudgingKey.Set(m, "operand")
	require.Equal(t, map[string]string{
		"build.appstudio.redhat.com/type": "nudge", "build.konflux-ci.dev/type": "nudge",
		"build.appstudio.redhat.com/nudging-component": "operand", "build.konflux-ci.dev/nudging-component": "operand",
	}, m)
	require.True(t, IsNudgeRun(m))
	require.True(t, IsNudgeRun(map[string]string{NudgeTypeKey.New: NudgeTypeValue}), "a new-form nudge run")
	require.True(t, IsNudgeRun(map[string]string{NudgeTypeKey.Old: NudgeTypeValue}), "an old-form nudge run")
}

// TestKeySelectorsAreDisjoint: the two informers' selectors together match every
// build of either form, and a build labelled both ways only once.
func TestKeySelectorsAreDisjoint(t *testing.T) {
	sels := PipelineTypeKey.Selectors(PipelineTypeBuild)
	for name, tc := range map[string]struct {
		labels  map[string]string
		matches int
	}{
		"old":             {map[string]string{PipelineTypeKey.Old: "build"}, 1},
		"new":             {map[string]string{PipelineTypeKey.New: "build"}, 1},
		"both":            {PipelineTypeKey.Set(nil, "build"), 1},
		"a test pipeline": {PipelineTypeKey.Set(nil, "test"), 0},
		"unlabelled":      {nil, 0},
	} {
		n := 0
		for _, s := range sels {
			if s.Matches(labels.Set(tc.labels)) {
				n++
			}
		}
		require.Equal(t, tc.matches, n, name)
	}
}

func TestEventType(t *testing.T) {
	require.True(t, IsPushEvent(nil, map[string]string{AnnotationEventType: "Push"}), "GitLab spelling")
	require.True(t, IsPushEvent(map[string]string{AnnotationEventType: "incoming"}, nil), "PaC writes it as a label too")
	require.False(t, IsPushEvent(nil, map[string]string{AnnotationEventType: "pull_request"}))
}
