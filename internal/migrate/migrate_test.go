package migrate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
)

func comp(name string, refs ...string) mirrorv1alpha1.Component {
	return mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: mirrorv1alpha1.ComponentSpec{BuildNudgesRef: refs}}
}

func imm(from, to string) konfluxv1alpha1.NudgeRelationship {
	return konfluxv1alpha1.NudgeRelationship{From: from, To: to, Mode: konfluxv1alpha1.ModeImmediate}
}

func TestBuild(t *testing.T) {
	comps := []mirrorv1alpha1.Component{
		comp("d"), comp("b", "d"), comp("a", "c", "b", "b"), comp("c", "d", "ghost"),
	}
	p := build("ns", comps, nil)
	require.Equal(t, []konfluxv1alpha1.NudgeRelationship{imm("a", "b"), imm("a", "c"), imm("b", "d"), imm("c", "d")}, p.Added,
		"sorted by source then target, repeated refs once")
	require.Equal(t, p.Added, p.Nudges)
	require.Equal(t, []konfluxv1alpha1.NudgeRelationship{imm("c", "ghost")}, p.Dangling)
	require.True(t, p.Applicable())
	require.Equal(t, p.Added, build("ns", []mirrorv1alpha1.Component{comps[3], comps[1], comps[0], comps[2]}, nil).Added, "order independent")

	var out bytes.Buffer
	p.Report(&out)
	require.Equal(t, `namespace ns: 4 nudge(s) from build-nudges-ref to add (mode immediate), 0 kept from the existing NudgeConfig
  + a -> b
  + a -> c
  + b -> d
  + c -> d
  ! dangling: c -> ghost: component ghost does not exist in namespace ns; not migrated
`, out.String())
}

func TestBuildMergesWithExisting(t *testing.T) {
	existing := &konfluxv1alpha1.NudgeConfig{
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: "42"},
		Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: []konfluxv1alpha1.NudgeRelationship{
			{From: "a", To: "b", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "g"},
			imm("x", "y"),
		}},
	}
	p := build("ns", []mirrorv1alpha1.Component{comp("a", "b", "c"), comp("b"), comp("c")}, existing)
	require.Equal(t, []konfluxv1alpha1.NudgeRelationship{imm("a", "c")}, p.Added, "a -> b exists and keeps its mode")
	require.Equal(t, append(existing.Spec.Nudges, imm("a", "c")), p.Nudges)
	require.Equal(t, "42", p.ResourceVersion)

	again := build("ns", []mirrorv1alpha1.Component{comp("a", "b")}, existing)
	require.False(t, again.Changes())
}

func TestBuildReportsCycles(t *testing.T) {
	p := build("ns", []mirrorv1alpha1.Component{comp("x", "y"), comp("y", "z"), comp("z", "x"), comp("s", "s")}, nil)
	require.False(t, p.Applicable())
	var out bytes.Buffer
	p.Report(&out)
	require.Contains(t, out.String(), "  x component s cannot nudge itself (entry 0)\n")
	require.Contains(t, out.String(), "  x cycle detected: x -> y -> z -> x\n")
	require.Contains(t, out.String(), "namespace ns NOT migrated")
}

func TestGitOpsChanges(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		path := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	write("apps/a.yaml", `# the operator
apiVersion: appstudio.redhat.com/v1alpha1
kind: Component
metadata:
  name: a
spec:
  componentName: a  # keep me
  build-nudges-ref:
    - b
  containerImage: quay.io/t/a
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
data: {k: v}
`)
	write("apps/other-ns.yaml", `apiVersion: appstudio.redhat.com/v1alpha1
kind: Component
metadata: {name: a, namespace: elsewhere}
spec: {build-nudges-ref: [b]}
`)
	write("apps/unknown.yml", `apiVersion: appstudio.redhat.com/v1alpha1
kind: Component
metadata: {name: zzz}
spec: {build-nudges-ref: [b]}
`)
	write("README.md", "not yaml: [")

	changes, err := GitOpsChanges(dir, "ns", map[string]bool{"a": true, "b": true})
	require.NoError(t, err)
	require.Len(t, changes, 1)
	require.Equal(t, "apps/a.yaml", changes[0].Source)
	require.Equal(t, "component-apps_a.yaml", changes[0].Output)
	require.Equal(t, []string{"a"}, changes[0].Components)
	require.Equal(t, `# the operator
apiVersion: appstudio.redhat.com/v1alpha1
kind: Component
metadata:
  name: a
spec:
  componentName: a # keep me
  containerImage: quay.io/t/a
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
data: {k: v}
`, string(changes[0].Content))
}

// build-nudges-ref becomes either kind with the same edges, and a NudgeConfig of
// one kind becomes the other with every edge, mode, gating group and batching
// policy; converting back gives the original.
func TestMigrateBetweenKinds(t *testing.T) {
	comps := []mirrorv1alpha1.Component{comp("a", "bundle"), comp("b", "bundle"), comp("bundle")}
	p := build("ns", comps, nil)
	require.NoError(t, p.To("appstudio.redhat.com/v1beta2"))
	require.False(t, p.Converts(), "nothing exists yet: a new NudgeConfig, no conversion")
	u, err := Manifest(p, true)
	require.NoError(t, err)
	require.Equal(t, "appstudio.redhat.com/v1beta2", u.GetAPIVersion())
	shipped := &mirrorv1beta2.NudgeConfig{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, shipped))
	viaShipped, err := nudgeconfigs.FromShipped(shipped)
	require.NoError(t, err)
	require.Equal(t, p.Nudges, viaShipped.Spec.Nudges)
	require.Error(t, p.To("v1"), "only the two kinds")

	existing := &konfluxv1alpha1.NudgeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: nudgeconfigs.Name, Namespace: "ns", ResourceVersion: "7", Annotations: map[string]string{"owner": "team-x"}},
		Spec: konfluxv1alpha1.NudgeConfigSpec{
			Nudges: []konfluxv1alpha1.NudgeRelationship{
				imm("a", "bundle"),
				{From: "b", To: "gated", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "g"},
				{From: "b", To: "ungated", Mode: konfluxv1alpha1.ModeValidated},
			},
			Batching: []konfluxv1alpha1.BatchingPolicy{{Target: "bundle", Release: konfluxv1alpha1.ReleaseAll}},
		},
	}
	existing.SetGroupVersionKind(nudgeconfigs.Own)
	toShipped := build("ns", []mirrorv1alpha1.Component{comp("a"), comp("b"), comp("bundle"), comp("gated"), comp("ungated")}, existing)
	require.NoError(t, toShipped.To("appstudio.redhat.com/v1beta2"))
	require.True(t, toShipped.Converts())
	require.True(t, toShipped.Changes(), "a conversion writes even when no edge is added")
	u, err = Manifest(toShipped, true)
	require.NoError(t, err)
	require.Empty(t, u.GetResourceVersion(), "the precondition is the old object's, not the new one's")
	shipped = &mirrorv1beta2.NudgeConfig{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, shipped))
	read, err := nudgeconfigs.FromShipped(shipped)
	require.NoError(t, err)
	require.Equal(t, existing.Spec, read.Spec)
	require.Equal(t, "team-x", shipped.Annotations["owner"])

	var out bytes.Buffer
	toShipped.Report(&out)
	require.Contains(t, out.String(), "converting the NudgeConfig from konflux-ci.dev/v1alpha1 to appstudio.redhat.com/v1beta2: 3 nudge(s), 1 batching polic(ies)")

	read.ResourceVersion = "9"
	back := build("ns", nil, read)
	require.NoError(t, back.To("konflux-ci.dev/v1alpha1"))
	u, err = Manifest(back, false)
	require.NoError(t, err)
	own := &konfluxv1alpha1.NudgeConfig{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, own))
	require.Equal(t, existing.Spec, own.Spec)
	require.Equal(t, existing.Annotations, own.Annotations, "the batching annotation is the field again")
	require.Equal(t, "team-x", read.Annotations["owner"], "converting does not change the plan's source")
	require.False(t, back.Applicable(), "b -> ungated has no gatingGroup and no ComponentGroup lists b: TestConvertingUngatedEdgesToOwn")
}

// An ungated validated edge of integration-service's kind cannot be written as
// nudgeflow's, which requires a gatingGroup (ADR 67): the conversion fills the only
// ComponentGroup listing the source, and with none or several refuses the
// namespace naming the edge and the candidates. Nothing is dropped.
func TestConvertingUngatedEdgesToOwn(t *testing.T) {
	shipped := func(nudges ...konfluxv1alpha1.NudgeRelationship) *konfluxv1alpha1.NudgeConfig {
		nc := &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: nudgeconfigs.Name, Namespace: "ns"},
			Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: nudges}}
		nc.SetGroupVersionKind(nudgeconfigs.Shipped)
		return nc
	}
	group := func(name string, members ...string) mirrorv1beta2.ComponentGroup {
		g := mirrorv1beta2.ComponentGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
		for _, m := range members {
			g.Spec.Components = append(g.Spec.Components, mirrorv1beta2.ComponentGroupMember{Name: m})
		}
		return g
	}
	ungated := func(from, to string) konfluxv1alpha1.NudgeRelationship {
		return konfluxv1alpha1.NudgeRelationship{From: from, To: to, Mode: konfluxv1alpha1.ModeValidated}
	}
	comps := []mirrorv1alpha1.Component{comp("a"), comp("b"), comp("c"), comp("d"), comp("t")}
	plan := func(groups ...mirrorv1beta2.ComponentGroup) *Plan {
		p := build("ns", comps, shipped(ungated("a", "t"), ungated("b", "t"), ungated("c", "t"),
			konfluxv1alpha1.NudgeRelationship{From: "d", To: "t", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "mine"}))
		p.Groups = groups
		require.NoError(t, p.To("konflux-ci.dev/v1alpha1"))
		return p
	}

	nested := group("nested", "c")
	nested.Spec.Components[0].Kind = "ComponentGroup" // a group of groups: no Snapshot of it holds a build of c
	p := plan(group("ga", "a", "t"), group("gb1", "b"), group("gb2", "b", "c"), nested)
	require.Equal(t, "ga", p.Nudges[0].GatingGroup, "a: the only ComponentGroup listing it")
	require.Equal(t, "gb2", p.Nudges[2].GatingGroup, "c: a nested group is no gate")
	require.Empty(t, p.Nudges[1].GatingGroup, "b: two candidates, the owner decides")
	require.Equal(t, "mine", p.Nudges[3].GatingGroup, "a named group is kept")
	require.Equal(t, []Ungated{{NudgeRelationship: ungated("b", "t"), Candidates: []string{"gb1", "gb2"}}}, p.Ungated)
	require.False(t, p.Applicable())
	_, err := Apply(context.Background(), nil, p)
	require.ErrorIs(t, err, errNotApplicable)
	var out bytes.Buffer
	p.Report(&out)
	require.Contains(t, out.String(), "  ~ validated a -> t had no gatingGroup: gated by ga, the only ComponentGroup listing a (konflux-ci.dev/v1alpha1 requires one)\n")
	require.Contains(t, out.String(), "  x validated b -> t has no gatingGroup, which konflux-ci.dev/v1alpha1 requires (ADR 67), and ComponentGroups gb1, gb2 all list b: add gatingGroup: <a ComponentGroup> to this edge in the appstudio.redhat.com/v1beta2 NudgeConfig, then run again\n")
	require.Contains(t, out.String(), "namespace ns NOT migrated")

	none := plan()
	require.Len(t, none.Ungated, 3)
	out.Reset()
	none.Report(&out)
	require.Contains(t, out.String(), "and no ComponentGroup lists a:")

	// Back to integration-service's kind (or written as it): ungated edges are fine there.
	require.NoError(t, p.To("appstudio.redhat.com/v1beta2"))
	require.Empty(t, p.Ungated)
	require.Empty(t, p.Nudges[0].GatingGroup, "the group the conversion filled is undone")
	require.True(t, p.Applicable())

	one := plan(group("ga", "a"), group("gb", "b"), group("gc", "c"))
	require.True(t, one.Applicable())
	u, err := Manifest(one, true)
	require.NoError(t, err)
	own := &konfluxv1alpha1.NudgeConfig{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, own))
	require.Equal(t, []string{"ga", "gb", "gc", "mine"}, []string{own.Spec.Nudges[0].GatingGroup, own.Spec.Nudges[1].GatingGroup, own.Spec.Nudges[2].GatingGroup, own.Spec.Nudges[3].GatingGroup})
}
