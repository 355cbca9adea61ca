package builds

import (
	"fmt"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
)

// Executor says which nudge edges nudgeflow executes.
//
// Konflux runs some edges itself: build-service nudges `build-nudges-ref` edges in
// namespaces WITHOUT a NudgeConfig; integration-service nudges `immediate` NudgeConfig
// edges in namespaces WITH one and ignores `validated` edges. So:
//
//	edge                                   | who else runs it     | all | exclusive
//	---------------------------------------|----------------------|-----|----------
//	NudgeConfig, mode immediate            | integration-service  | yes | no
//	NudgeConfig, mode validated            | nobody               | yes | yes
//	build-nudges-ref (no NudgeConfig)      | build-service        | yes | no
//	any edge held by an active ChangeGroup | nobody knows groups  | signal the group (both)
//
// `all` is for clusters where nudgeflow replaces both services' nudging;
// `exclusive` for clusters where they still run: no edge is ever nudged twice.
type Executor string

const (
	ExecutorAll       Executor = "all"
	ExecutorExclusive Executor = "exclusive"
)

// ParseExecutor accepts "", "all" (the default) and "exclusive".
func ParseExecutor(s string) (Executor, error) {
	switch Executor(s) {
	case "", ExecutorAll:
		return ExecutorAll, nil
	case ExecutorExclusive:
		return ExecutorExclusive, nil
	}
	return "", fmt.Errorf("executor %q: want %q or %q", s, ExecutorAll, ExecutorExclusive)
}

// EdgeSource says where an edge is declared.
type EdgeSource string

const (
	SourceNudgeConfig    EdgeSource = "NudgeConfig"
	SourceBuildNudgesRef EdgeSource = "build-nudges-ref"
)

// Edge is one nudge relationship from a built component.
type Edge struct {
	From, To    string
	Mode        konfluxv1alpha1.NudgeMode
	GatingGroup string
	Source      EdgeSource
}

// EdgesFrom lists the edges of component: the NudgeConfig's when one exists (it
// replaces build-nudges-ref entirely), else the component's build-nudges-ref as
// immediate edges.
func EdgesFrom(nc *konfluxv1alpha1.NudgeConfig, comp *mirrorv1alpha1.Component, component string) []Edge {
	var out []Edge
	if nc != nil {
		for _, n := range nc.Spec.Nudges {
			if n.From == component {
				out = append(out, Edge{From: n.From, To: n.To, Mode: n.EffectiveMode(), GatingGroup: n.GatingGroup, Source: SourceNudgeConfig})
			}
		}
		return out
	}
	if comp == nil {
		return nil
	}
	for _, to := range comp.Spec.BuildNudgesRef {
		if to != "" && to != component {
			out = append(out, Edge{From: component, To: to, Mode: konfluxv1alpha1.ModeImmediate, Source: SourceBuildNudgesRef})
		}
	}
	return out
}

// Executes reports whether nudgeflow runs e's nudge under executor (see Executor).
func (x Executor) Executes(e Edge) bool {
	if x != ExecutorExclusive {
		return true
	}
	return e.Source == SourceNudgeConfig && e.Mode == konfluxv1alpha1.ModeValidated
}
