package nudgegraph

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
)

// Format is an output format of Render.
type Format string

const (
	Mermaid Format = "mermaid"
	dot     Format = "dot"
	JSON    Format = "json"
)

// Formats are the formats Render knows, for flag help.
var Formats = []Format{Mermaid, dot, JSON}

// View is what a rendering shows: the edges of a namespace and which components no
// longer exist (stale references).
type View struct {
	Namespace string
	Nudges    []Edge
	// Missing are components named by edges that do not exist in the namespace.
	Missing []string
	// Batching are the batching policies (spec.batching): their targets are marked.
	Batching []konfluxv1alpha1.BatchingPolicy
}

// batchLabel describes a target's batching policy in a node label ("" when not batched).
func (v View) batchLabel(name string) string {
	for _, p := range v.Batching {
		if p.Target != name {
			continue
		}
		a := batchingDefaults(p)
		s := fmt.Sprintf("batched: window %s, maxWait %s, release %s", a.window, a.maxWait, p.EffectiveRelease())
		if p.Quorum != nil {
			s += fmt.Sprintf(" %d", *p.Quorum)
		}
		return s
	}
	return ""
}

type batchTimes struct{ window, maxWait string }

func batchingDefaults(p konfluxv1alpha1.BatchingPolicy) batchTimes {
	t := batchTimes{konfluxv1alpha1.DefaultBatchWindow, konfluxv1alpha1.DefaultBatchMaxWait}
	if p.Window != nil {
		t.window = p.Window.Duration.String()
	}
	if p.MaxWait != nil {
		t.maxWait = p.MaxWait.Duration.String()
	}
	return t
}

// JSONGraph is the JSON form of a View; UIs consume it.
type JSONGraph struct {
	Namespace  string          `json:"namespace"`
	Components []JSONComponent `json:"components"`
	Edges      []JSONEdge      `json:"edges"`
}

// JSONComponent is one node; Missing marks a stale reference.
type JSONComponent struct {
	Name    string `json:"name"`
	Missing bool   `json:"missing"`
	// Batched describes the component's batching policy when it is a batched target.
	Batched string `json:"batched,omitempty"`
}

// JSONEdge is one nudge; Stale is true when either end is missing.
type JSONEdge struct {
	From        string `json:"from"`
	To          string `json:"to"`
	Mode        string `json:"mode"`
	GatingGroup string `json:"gatingGroup,omitempty"`
	Stale       bool   `json:"stale"`
}

// Render writes v in format f. Components come out sorted and edges in entry order, so
// the output is stable and diffs of it are meaningful.
func Render(w io.Writer, f Format, v View) error {
	missing := make(map[string]bool, len(v.Missing))
	for _, m := range v.Missing {
		missing[m] = true
	}
	names := components(v.Nudges)
	switch f {
	case JSON:
		g := JSONGraph{Namespace: v.Namespace, Components: []JSONComponent{}, Edges: []JSONEdge{}}
		for _, n := range names {
			g.Components = append(g.Components, JSONComponent{Name: n, Missing: missing[n], Batched: v.batchLabel(n)})
		}
		for _, e := range v.Nudges {
			g.Edges = append(g.Edges, JSONEdge{
				From: e.From, To: e.To, Mode: string(e.EffectiveMode()), GatingGroup: e.GatingGroup,
				Stale: missing[e.From] || missing[e.To],
			})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(g)
	case Mermaid:
		return renderMermaid(w, names, missing, v)
	case dot:
		return renderDOT(w, names, missing, v)
	default:
		return fmt.Errorf("unknown graph format %q (want one of mermaid, dot, json)", f)
	}
}

func edgeLabel(e Edge) string {
	if e.EffectiveMode() == "validated" {
		return "validated by " + e.GatingGroup
	}
	return string(e.EffectiveMode())
}

// renderMermaid uses positional node ids: component names may contain "-", which
// Mermaid would read as part of an arrow.
func renderMermaid(w io.Writer, names []string, missing map[string]bool, v View) error {
	var b strings.Builder
	id := make(map[string]string, len(names))
	b.WriteString("flowchart LR\n")
	if v.Namespace != "" {
		fmt.Fprintf(&b, "  %%%% nudges of namespace %s\n", v.Namespace)
	}
	for i, n := range names {
		id[n] = "c" + strconv.Itoa(i)
		switch {
		case missing[n]:
			fmt.Fprintf(&b, "  %s[\"%s (missing)\"]:::stale\n", id[n], n)
		case v.batchLabel(n) != "":
			fmt.Fprintf(&b, "  %s[[\"%s<br/>%s\"]]:::batched\n", id[n], n, v.batchLabel(n))
		default:
			fmt.Fprintf(&b, "  %s[\"%s\"]\n", id[n], n)
		}
	}
	for _, e := range v.Nudges {
		arrow := "-->"
		if e.EffectiveMode() == "validated" {
			arrow = "==>"
		}
		if missing[e.From] || missing[e.To] {
			arrow = "-.->"
		}
		fmt.Fprintf(&b, "  %s %s|\"%s\"| %s\n", id[e.From], arrow, edgeLabel(e), id[e.To])
	}
	b.WriteString("  classDef stale stroke:#c00,stroke-dasharray:5 5,color:#c00\n")
	if len(v.Batching) > 0 {
		b.WriteString("  classDef batched stroke:#06c,stroke-width:3px\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func renderDOT(w io.Writer, names []string, missing map[string]bool, v View) error {
	var b strings.Builder
	b.WriteString("digraph nudges {\n  rankdir=LR;\n")
	if v.Namespace != "" {
		fmt.Fprintf(&b, "  label=%q;\n", "nudges of namespace "+v.Namespace)
	}
	for _, n := range names {
		switch {
		case missing[n]:
			fmt.Fprintf(&b, "  %q [label=%q, style=dashed, color=red, fontcolor=red];\n", n, n+" (missing)")
		case v.batchLabel(n) != "":
			fmt.Fprintf(&b, "  %q [label=%q, shape=box3d, color=blue];\n", n, n+"\n"+v.batchLabel(n))
		default:
			fmt.Fprintf(&b, "  %q;\n", n)
		}
	}
	for _, e := range v.Nudges {
		attrs := []string{fmt.Sprintf("label=%q", edgeLabel(e))}
		switch {
		case missing[e.From] || missing[e.To]:
			attrs = append(attrs, "style=dashed", "color=red")
		case e.EffectiveMode() == "validated":
			attrs = append(attrs, "style=bold")
		}
		fmt.Fprintf(&b, "  %q -> %q [%s];\n", e.From, e.To, strings.Join(attrs, ", "))
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}
