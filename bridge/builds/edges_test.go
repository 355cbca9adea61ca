package builds

import (
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
)

// The executor matrix: exclusive runs only what no other Konflux service runs.
func TestExecutorMatrix(t *testing.T) {
	nc := &konfluxv1alpha1.NudgeConfig{Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: []konfluxv1alpha1.NudgeRelationship{
		{From: "a", To: "b"}, {From: "a", To: "c", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "g"}, {From: "x", To: "y"},
	}}}
	comp := &mirrorv1alpha1.Component{Spec: mirrorv1alpha1.ComponentSpec{BuildNudgesRef: []string{"b", "a", ""}}}

	withNC := EdgesFrom(nc, comp, "a")
	require.Equal(t, []Edge{
		{From: "a", To: "b", Mode: konfluxv1alpha1.ModeImmediate, Source: SourceNudgeConfig},
		{From: "a", To: "c", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "g", Source: SourceNudgeConfig},
	}, withNC, "a NudgeConfig replaces build-nudges-ref; mode defaults to immediate")
	withoutNC := EdgesFrom(nil, comp, "a")
	require.Equal(t, []Edge{{From: "a", To: "b", Mode: konfluxv1alpha1.ModeImmediate, Source: SourceBuildNudgesRef}}, withoutNC)

	require.True(t, ExecutorAll.Executes(withNC[0]))
	require.True(t, ExecutorAll.Executes(withNC[1]))
	require.True(t, ExecutorAll.Executes(withoutNC[0]))
	require.False(t, ExecutorExclusive.Executes(withNC[0]), "integration-service runs immediate NudgeConfig edges")
	require.True(t, ExecutorExclusive.Executes(withNC[1]), "nobody else runs validated edges")
	require.False(t, ExecutorExclusive.Executes(withoutNC[0]), "build-service runs build-nudges-ref edges")

	_, err := ParseExecutor("sometimes")
	require.Error(t, err)
	x, err := ParseExecutor("")
	require.NoError(t, err)
	require.Equal(t, ExecutorAll, x)
}

func TestIsPushBuild(t *testing.T) {
	plr := func(labels, annotations map[string]string) *tektonv1.PipelineRun {
		return &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations}}
	}
	build := map[string]string{LabelComponent: "a", LabelPipelineType: PipelineTypeBuild}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for kk, vv := range build {
			m[kk] = vv
		}
		return m
	}
	require.True(t, IsPushBuild(plr(build, map[string]string{KeyEventType: "push"})))
	require.True(t, IsPushBuild(plr(build, map[string]string{KeyEventType: "Push"})), "GitLab spelling")
	require.True(t, IsPushBuild(plr(build, map[string]string{KeyEventType: "incoming"})))
	require.True(t, IsPushBuild(plr(with(KeyEventType, "push"), nil)), "PaC sets it as a label too")
	require.False(t, IsPushBuild(plr(build, map[string]string{KeyEventType: "pull_request"})))
	require.False(t, IsPushBuild(plr(build, map[string]string{KeyEventType: "Merge Request"})))
	require.False(t, IsPushBuild(plr(map[string]string{LabelComponent: "a"}, map[string]string{KeyEventType: "push"})))
}
