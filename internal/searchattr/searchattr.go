// Package searchattr names the typed Temporal search attributes nudgeflow sets, so a
// person can filter its workflows in the Web UI (for example
// `ChangeGroup = "bundle-x-update" AND Phase = "Waiting"`).
package searchattr

import (
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
)

// The keys. Keyword rather than Text: SQL visibility (the dev server) allows only three
// Text attributes per namespace, and exact matches are what people filter by.
var (
	// KubeNamespace is the Kubernetes namespace of the object the workflow serves.
	KubeNamespace = temporal.NewSearchAttributeKeyKeyword("KubeNamespace")
	// ChangeGroup is the ChangeGroup's name.
	ChangeGroup = temporal.NewSearchAttributeKeyKeyword("ChangeGroup")
	// NudgedComponent is the component that receives the nudge.
	NudgedComponent = temporal.NewSearchAttributeKeyKeyword("NudgedComponent")
	// NudgingComponent is the component whose build nudges (nudge workflows).
	NudgingComponent = temporal.NewSearchAttributeKeyKeyword("NudgingComponent")
	// NudgeEdge is "from->to" for nudge workflows.
	NudgeEdge = temporal.NewSearchAttributeKeyKeyword("NudgeEdge")
	// NudgeWriter is the writer of a nudge's pull request: direct (nudgeflow
	// writes it) or renovate (a Renovate PipelineRun).
	NudgeWriter = temporal.NewSearchAttributeKeyKeyword("NudgeWriter")
	// Phase is the workflow's phase, in the CR's vocabulary.
	Phase = temporal.NewSearchAttributeKeyKeyword("Phase")
	// ReadyCount is how many components of a ChangeGroup are ready.
	ReadyCount = temporal.NewSearchAttributeKeyInt64("ReadyCount")
	// PRGroup is the ADR 29 PR group (the source branch before its first "@").
	PRGroup = temporal.NewSearchAttributeKeyKeyword("PRGroup")
)

// All lists every key with its type, for registering them on a namespace.
func All() map[string]enums.IndexedValueType {
	return map[string]enums.IndexedValueType{
		KubeNamespace.GetName():    enums.INDEXED_VALUE_TYPE_KEYWORD,
		ChangeGroup.GetName():      enums.INDEXED_VALUE_TYPE_KEYWORD,
		NudgedComponent.GetName():  enums.INDEXED_VALUE_TYPE_KEYWORD,
		NudgingComponent.GetName(): enums.INDEXED_VALUE_TYPE_KEYWORD,
		NudgeEdge.GetName():        enums.INDEXED_VALUE_TYPE_KEYWORD,
		NudgeWriter.GetName():      enums.INDEXED_VALUE_TYPE_KEYWORD,
		Phase.GetName():            enums.INDEXED_VALUE_TYPE_KEYWORD,
		ReadyCount.GetName():       enums.INDEXED_VALUE_TYPE_INT,
		PRGroup.GetName():          enums.INDEXED_VALUE_TYPE_KEYWORD,
	}
}

// DevServerFlags are the `--search-attribute` values for `temporal server start-dev`.
func DevServerFlags() []string {
	names := make([]string, 0, len(All()))
	for name, t := range All() {
		kind := "Keyword"
		if t == enums.INDEXED_VALUE_TYPE_INT {
			kind = "Int"
		}
		names = append(names, "--search-attribute", name+"="+kind)
	}
	return names
}
