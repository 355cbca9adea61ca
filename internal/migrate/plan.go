// Package migrate turns the build-nudges-ref fields of a namespace's Components (ADR 29)
// into its NudgeConfig (ADR 67), of either kind (nudgeflow's konflux-ci.dev/v1alpha1
// or integration-service's appstudio.redhat.com/v1beta2), and converts a NudgeConfig
// from one kind to the other without losing an edge, mode, gating group or batching
// policy. Planning is pure; applying and the GitOps output live
// beside it. A migrated graph is judged by internal/nudgegraph, the code the admission
// webhook runs, so a plan that passes here is one the API server accepts.
package migrate

import (
	"fmt"
	"io"
	"slices"
	"strings"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
	"github.com/nudgeflow/nudgeflow/internal/nudgegraph"
)

// FieldManager owns what the migration writes with server-side apply.
const FieldManager = "nudgeflow-migrate"

// Plan is what the migration of one namespace would do.
type Plan struct {
	Namespace string
	// Nudges is the resulting spec.nudges: the existing entries unchanged and in their
	// order (they keep their mode), then the added edges.
	Nudges []konfluxv1alpha1.NudgeRelationship
	// Added are the build-nudges-ref edges not yet in the NudgeConfig, mode immediate
	// (what build-service does today).
	Added []konfluxv1alpha1.NudgeRelationship
	// Kept counts the entries of the existing NudgeConfig.
	Kept int
	// Dangling are build-nudges-ref edges whose target is no Component of the namespace.
	// They cannot be nudged today and the webhook would reject them, so they are
	// reported and left out.
	Dangling []konfluxv1alpha1.NudgeRelationship
	// Problems are what nudgegraph finds in Nudges (cycles, self-nudges). A plan with
	// problems is not applied: which edge of a loop to drop is the owner's decision.
	Problems []nudgegraph.Problem
	// Components are the names of the namespace's Components.
	Components map[string]bool
	// Exists is whether the namespace already has a NudgeConfig.
	Exists bool
	// ResourceVersion of the existing NudgeConfig: applying is conditional on it, so an
	// edit made between reading and writing is never overwritten.
	ResourceVersion string
	// Batching are the existing NudgeConfig's batching policies, carried into the
	// target kind (a field of nudgeflow's, an annotation of integration-service's).
	Batching []konfluxv1alpha1.BatchingPolicy
	// Labels and Annotations of the existing NudgeConfig, carried on conversion.
	Labels, Annotations map[string]string
	// Source is the API of the existing NudgeConfig ("" when none); Target the API
	// the plan writes (Source by default, else nudgeflow's own).
	Source, Target string
	// ShippedLimit is the most edges integration-service's kind holds, as its served
	// CRD says (Load reads it; the zero value is nudgeconfigs.DefaultShippedLimit).
	ShippedLimit nudgeconfigs.Limit
	// Groups are the namespace's ComponentGroups (Load reads them): they decide the
	// gatingGroup of an ungated validated edge converted to nudgeflow's kind.
	Groups []mirrorv1beta2.ComponentGroup
	// Gated are the ungated validated edges of integration-service's kind this
	// conversion to nudgeflow's gives a gatingGroup (the only ComponentGroup listing
	// the source), as they are in Nudges.
	Gated []konfluxv1alpha1.NudgeRelationship
	// Ungated are the ungated validated edges it cannot convert: nudgeflow's kind
	// requires a gatingGroup (ADR 67) and no single ComponentGroup lists the source.
	// A plan with any is not applied; nothing is dropped.
	Ungated []Ungated
}

// Ungated is a validated edge without gatingGroup that cannot be converted, and the
// ComponentGroups listing its source (none, or more than one).
type Ungated struct {
	konfluxv1alpha1.NudgeRelationship
	Candidates []string
}

// Converts is true when the plan writes the NudgeConfig as another kind than the
// one that exists.
func (p *Plan) Converts() bool { return p.Exists && p.Source != p.Target }

// To makes the plan write the NudgeConfig as api (nudgeconfigs.Own or
// nudgeconfigs.Shipped, as group/version).
func (p *Plan) To(api string) error {
	switch api {
	case nudgeconfigs.Own.GroupVersion().String(), nudgeconfigs.Shipped.GroupVersion().String():
		p.Target = api
		p.gate()
		return nil
	}
	return fmt.Errorf("NudgeConfig API %q: want %s or %s", api, nudgeconfigs.Own.GroupVersion(), nudgeconfigs.Shipped.GroupVersion())
}

// Applicable is true when the plan has no graph problems and converts every edge.
func (p *Plan) Applicable() bool { return len(p.Problems) == 0 && len(p.Ungated) == 0 }

// gate gives the ungated validated edges a gatingGroup when the plan converts to
// nudgeflow's kind, whose admission requires one for the edges a create adds (all of
// them). The group is the only ComponentGroup that lists the source: its Snapshots
// are the ones that hold the source's builds, so it is the gate integration-service
// would have used had the group been named. With none or several the choice is
// the owner's: the edge is reported in Ungated and the plan is not applied. Written
// as the same kind, or to integration-service's, edges stay as they are (a stored
// ungated edge stays admissible on update). It undoes a previous call first, so
// the plan follows its last To.
func (p *Plan) gate() {
	for _, g := range p.Gated {
		if i := slices.IndexFunc(p.Nudges, func(e konfluxv1alpha1.NudgeRelationship) bool { return e.From == g.From && e.To == g.To }); i >= 0 {
			p.Nudges[i].GatingGroup = ""
		}
	}
	p.Gated, p.Ungated = nil, nil
	if !p.Converts() || p.Target != nudgeconfigs.Own.GroupVersion().String() {
		return
	}
	for i, e := range p.Nudges {
		if e.EffectiveMode() != konfluxv1alpha1.ModeValidated || e.GatingGroup != "" {
			continue
		}
		held := nudgeconfigs.GroupsHolding(p.Groups, e.From)
		if len(held) != 1 {
			p.Ungated = append(p.Ungated, Ungated{NudgeRelationship: e, Candidates: held})
			continue
		}
		p.Nudges[i].GatingGroup = held[0]
		p.Gated = append(p.Gated, p.Nudges[i])
	}
}

// Changes is true when applying would write something.
func (p *Plan) Changes() bool { return len(p.Added) > 0 || p.Converts() }

// build plans one namespace from its Components and its NudgeConfig (nil when none).
// Components and references are visited in name order so the plan is reproducible.
func build(ns string, components []mirrorv1alpha1.Component, existing *konfluxv1alpha1.NudgeConfig) *Plan {
	p := &Plan{Namespace: ns, Target: nudgeconfigs.Own.GroupVersion().String()}
	if existing != nil {
		p.Exists = true
		p.ResourceVersion = existing.ResourceVersion
		p.Nudges = slices.Clone(existing.Spec.Nudges)
		p.Kept = len(existing.Spec.Nudges)
		p.Batching = slices.Clone(existing.Spec.Batching)
		p.Labels, p.Annotations = existing.Labels, existing.Annotations
		p.Source = nudgeconfigs.APIOf(existing)
		p.Target = p.Source
	}
	names := make(map[string]bool, len(components))
	for _, c := range components {
		names[c.Name] = true
	}
	p.Components = names
	sorted := slices.Clone(components)
	slices.SortFunc(sorted, func(a, b mirrorv1alpha1.Component) int { return strings.Compare(a.Name, b.Name) })
	have := nudgegraph.NewIndex(p.Nudges)
	seen := map[[2]string]bool{}
	for _, c := range sorted {
		refs := slices.Clone(c.Spec.BuildNudgesRef)
		slices.Sort(refs)
		for _, to := range slices.Compact(refs) {
			e := konfluxv1alpha1.NudgeRelationship{From: c.Name, To: to, Mode: konfluxv1alpha1.ModeImmediate}
			switch {
			case have.Has(c.Name, to) || seen[[2]string{c.Name, to}]:
			case !names[to]:
				p.Dangling = append(p.Dangling, e)
			default:
				seen[[2]string{c.Name, to}] = true
				p.Added = append(p.Added, e)
			}
		}
	}
	p.Nudges = append(p.Nudges, p.Added...)
	p.Problems = nudgegraph.Check(p.Nudges)
	return p
}

// Report writes what the plan does, for a person: every added edge, every dangling
// target and every problem, so nothing is dropped silently.
func (p *Plan) Report(w io.Writer) {
	fmt.Fprintf(w, "namespace %s: %d nudge(s) from build-nudges-ref to add (mode immediate), %d kept from the existing NudgeConfig\n",
		p.Namespace, len(p.Added), p.Kept)
	for _, e := range p.Added {
		fmt.Fprintf(w, "  + %s -> %s\n", e.From, e.To)
	}
	for _, e := range p.Dangling {
		fmt.Fprintf(w, "  ! dangling: %s -> %s: component %s does not exist in namespace %s; not migrated\n", e.From, e.To, e.To, p.Namespace)
	}
	for _, pr := range p.Problems {
		fmt.Fprintf(w, "  x %s\n", pr.Message)
	}
	for _, e := range p.Gated {
		fmt.Fprintf(w, "  ~ validated %s -> %s had no gatingGroup: gated by %s, the only ComponentGroup listing %s (%s requires one)\n",
			e.From, e.To, e.GatingGroup, e.From, p.Target)
	}
	for _, e := range p.Ungated {
		which := "no ComponentGroup lists " + e.From
		if len(e.Candidates) > 0 {
			which = "ComponentGroups " + strings.Join(e.Candidates, ", ") + " all list " + e.From
		}
		fmt.Fprintf(w, "  x validated %s -> %s has no gatingGroup, which %s requires (ADR 67), and %s: add gatingGroup: <a ComponentGroup> to this edge in the %s NudgeConfig, then run again\n",
			e.From, e.To, p.Target, which, p.Source)
	}
	if p.Converts() {
		fmt.Fprintf(w, "  converting the NudgeConfig from %s to %s: %d nudge(s), %d batching polic(ies); the %s one is left in place: delete it once the %s one is applied (while both exist, %s is read)\n",
			p.Source, p.Target, len(p.Nudges), len(p.Batching), p.Source, p.Target, nudgeconfigs.Shipped.GroupVersion())
	}
	if !p.Applicable() {
		fmt.Fprintf(w, "  namespace %s NOT migrated: fix build-nudges-ref (or the NudgeConfig) and run again\n", p.Namespace)
	}
}
