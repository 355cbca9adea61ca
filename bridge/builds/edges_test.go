package builds

import (
	"testing"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
)

// The division of labour: every edge has exactly one runner, whoever is installed.
func TestPeersMatrix(t *testing.T) {
	own := &konfluxv1alpha1.NudgeConfig{Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: []konfluxv1alpha1.NudgeRelationship{
		{From: "a", To: "b"}, {From: "a", To: "c", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "g"}, {From: "a", To: "d"}, {From: "x", To: "y"},
	}}}
	shipped := own.DeepCopy()
	shipped.SetGroupVersionKind(nudgeconfigs.Shipped)
	comp := &mirrorv1alpha1.Component{Spec: mirrorv1alpha1.ComponentSpec{BuildNudgesRef: []string{"b", "a", ""}}}

	withOwn := EdgesFrom(own, comp, "a")
	require.Equal(t, []Edge{
		{From: "a", To: "b", Mode: konfluxv1alpha1.ModeImmediate, Source: sourceNudgeConfig, InBuildNudgesRef: true},
		{From: "a", To: "c", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "g", Source: sourceNudgeConfig},
		{From: "a", To: "d", Mode: konfluxv1alpha1.ModeImmediate, Source: sourceNudgeConfig},
	}, withOwn, "a NudgeConfig replaces build-nudges-ref; mode defaults to immediate")
	withShipped := EdgesFrom(shipped, comp, "a")
	require.Equal(t, sourceShippedNudgeConfig, withShipped[0].Source)
	withoutNC := EdgesFrom(nil, comp, "a")
	require.Equal(t, []Edge{{From: "a", To: "b", Mode: konfluxv1alpha1.ModeImmediate, Source: sourceBuildNudgesRef, InBuildNudgesRef: true}}, withoutNC)
	require.Nil(t, EdgesFrom(nil, nil, "a"))

	alone, bs, is, both := Peers{}, Peers{BuildService: true}, Peers{IntegrationService: true}, Peers{BuildService: true, IntegrationService: true}
	for _, c := range []struct {
		name  string
		edge  Edge
		peers Peers
		want  Runner
	}{
		{"alone runs build-nudges-ref", withoutNC[0], alone, RunnerNudgeflow},
		{"build-service runs build-nudges-ref", withoutNC[0], bs, RunnerBuildService},
		{"build-service runs build-nudges-ref beside integration-service", withoutNC[0], both, RunnerBuildService},
		{"own kind, immediate, also in build-nudges-ref: build-service", withOwn[0], bs, RunnerBuildService},
		{"own kind, immediate, also in build-nudges-ref, alone", withOwn[0], alone, RunnerNudgeflow},
		{"own kind, immediate, only there: nobody else reads it", withOwn[2], both, RunnerNudgeflow},
		{"integration-service never reads nudgeflow's kind", withOwn[2], is, RunnerNudgeflow},
		{"own kind, validated", withOwn[1], both, RunnerNudgeflow},
		{"shipped kind, immediate: integration-service", withShipped[0], is, RunnerIntegrationService},
		{"shipped kind, immediate: build-service stands down for it", withShipped[0], both, RunnerIntegrationService},
		{"shipped kind, immediate, no integration-service (build-service stands down)", withShipped[2], bs, RunnerNudgeflow},
		{"shipped kind, validated: integration-service ignores it", withShipped[1], both, RunnerNudgeflow},
	} {
		require.Equal(t, c.want, c.peers.RunnerOf(c.edge), c.name)
		require.Equal(t, c.want == RunnerNudgeflow, c.peers.Executes(c.edge), c.name)
	}
}

func TestParsePeers(t *testing.T) {
	for in, want := range map[string]Peers{
		"none":                               {},
		"build-service":                      {BuildService: true},
		"integration-service":                {IntegrationService: true},
		"build-service, integration-service": {BuildService: true, IntegrationService: true},
		"integration-service,build-service":  {BuildService: true, IntegrationService: true},
	} {
		p, auto, err := ParsePeers(in)
		require.NoError(t, err, in)
		require.False(t, auto, in)
		require.Equal(t, want, p, in)
		back, _, err := ParsePeers(p.String())
		require.NoError(t, err)
		require.Equal(t, p, back, "String is a --nudging-peers value")
	}
	for _, in := range []string{"", "auto"} {
		_, auto, err := ParsePeers(in)
		require.NoError(t, err)
		require.True(t, auto, in)
	}
	_, _, err := ParsePeers("tekton")
	require.ErrorContains(t, err, "want auto, none, or a comma-separated list")
	p, err := PeersFromExecutor("exclusive")
	require.NoError(t, err)
	require.Equal(t, Peers{BuildService: true, IntegrationService: true}, p)
	p, err = PeersFromExecutor("all")
	require.NoError(t, err)
	require.Equal(t, Peers{}, p)
	_, err = PeersFromExecutor("sometimes")
	require.Error(t, err)
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
