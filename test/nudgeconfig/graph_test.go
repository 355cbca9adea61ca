package nudgeconfig_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// TestGraphExport renders a namespace's NudgeConfig with a stale reference in the
// three formats, exactly.
func TestGraphExport(t *testing.T) {
	w := world.Get(t)
	cfg := w.Kubeconfig(t)
	ns := w.Namespace(t)
	createComponents(t, w, ns, []string{"api", "ui", "bundle", "gone"}, nil)
	require.NoError(t, w.Kube.Create(context.Background(), nudgeConfig(ns,
		edge("api", "ui"),
		konfluxv1alpha1.NudgeRelationship{From: "api", To: "bundle", Mode: konfluxv1alpha1.ModeValidated, GatingGroup: "release-group"},
		edge("gone", "bundle"))))
	require.NoError(t, w.Kube.Delete(context.Background(), componentRef(ns, "gone")))

	mermaid, err := nudgeflow(t, "graph", "--kubeconfig", cfg, "-n", ns, "--format", "mermaid")
	require.NoError(t, err, mermaid)
	require.Equal(t, `flowchart LR
  %% nudges of namespace `+ns+`
  c0["api"]
  c1["bundle"]
  c2["gone (missing)"]:::stale
  c3["ui"]
  c0 -->|"immediate"| c3
  c0 ==>|"validated by release-group"| c1
  c2 -.->|"immediate"| c1
  classDef stale stroke:#c00,stroke-dasharray:5 5,color:#c00
`, mermaid)

	dot, err := nudgeflow(t, "graph", "--kubeconfig", cfg, "-n", ns, "--format", "dot")
	require.NoError(t, err, dot)
	require.Equal(t, `digraph nudges {
  rankdir=LR;
  label="nudges of namespace `+ns+`";
  "api";
  "bundle";
  "gone" [label="gone (missing)", style=dashed, color=red, fontcolor=red];
  "ui";
  "api" -> "ui" [label="immediate"];
  "api" -> "bundle" [label="validated by release-group", style=bold];
  "gone" -> "bundle" [label="immediate", style=dashed, color=red];
}
`, dot)

	js, err := nudgeflow(t, "graph", "--kubeconfig", cfg, "-n", ns, "--format", "json")
	require.NoError(t, err, js)
	require.JSONEq(t, `{"namespace": "`+ns+`",
	  "components": [{"name":"api","missing":false},{"name":"bundle","missing":false},{"name":"gone","missing":true},{"name":"ui","missing":false}],
	  "edges": [
	    {"from":"api","to":"ui","mode":"immediate","stale":false},
	    {"from":"api","to":"bundle","mode":"validated","gatingGroup":"release-group","stale":false},
	    {"from":"gone","to":"bundle","mode":"immediate","stale":true}]}`, js)

	_, err = nudgeflow(t, "graph", "--kubeconfig", cfg, "-n", ns, "--format", "svg")
	require.EqualError(t, err, `unknown graph format "svg" (want one of mermaid, dot, json)`)
}
