package builds

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
)

// Peers are the Konflux services that nudge on the cluster beside nudgeflow. The
// division of labour follows what each of them does (reference §1, §6.4):
//
//	edge                                             | build-service | integration-service | nudgeflow
//	-------------------------------------------------|---------------|---------------------|----------
//	shipped NudgeConfig (appstudio v1beta2), immediate | stands down   | runs it             | only without integration-service,
//	                                                 |               |                     | or for a target it leaves out (takeover.go)
//	shipped NudgeConfig, validated                   | stands down   | ignores it          | runs it
//	nudgeflow's NudgeConfig (konflux-ci.dev), validated | (its nudge run is cancelled at admission) | — | runs it
//	nudgeflow's NudgeConfig, immediate, ALSO in the  | runs it       | —                   | only without build-service
//	  source's build-nudges-ref                      |               |                     |
//	nudgeflow's NudgeConfig, immediate, only there   | —             | —                   | runs it
//	build-nudges-ref (no NudgeConfig)                | runs it       | —                   | only without build-service
//	a build labelled only with ADR 69's keys         | does not see it | does not see it   | runs every edge (NewModelBuild)
//	any edge held by a ChangeGroup or a batch        | its nudge PipelineRun is cancelled at admission; the group collects the build
//
// docs/konflux.md keeps this table with the test that shows each row.
// So every build is nudged exactly once per edge, whoever is installed.
// build-service reads only the shipped kind (it stands down where one named
// nudge-config exists) and integration-service reads only the shipped kind.
type Peers struct {
	BuildService       bool `json:"buildService"`
	IntegrationService bool `json:"integrationService"`
}

// Runner names who nudges an edge.
type Runner string

const (
	RunnerNudgeflow          Runner = "nudgeflow"
	RunnerBuildService       Runner = "build-service"
	RunnerIntegrationService Runner = "integration-service"
)

// PeersAuto is the --nudging-peers value that detects the peers (DetectPeers).
const PeersAuto = "auto"

// ParsePeers reads --nudging-peers: "auto", "none", or a comma-separated list of
// build-service and integration-service. auto is returned for "auto" and "".
func ParsePeers(s string) (p Peers, auto bool, err error) {
	switch strings.TrimSpace(s) {
	case "", PeersAuto:
		return Peers{}, true, nil
	case "none":
		return Peers{}, false, nil
	}
	for _, name := range strings.Split(s, ",") {
		switch Runner(strings.TrimSpace(name)) {
		case RunnerBuildService:
			p.BuildService = true
		case RunnerIntegrationService:
			p.IntegrationService = true
		default:
			return Peers{}, false, fmt.Errorf("nudging peers %q: want auto, none, or a comma-separated list of %s and %s",
				s, RunnerBuildService, RunnerIntegrationService)
		}
	}
	return p, false, nil
}

// PeersFromExecutor maps the deprecated --executor values: "all" is no peers,
// "exclusive" is both services.
func PeersFromExecutor(x string) (Peers, error) {
	switch x {
	case "all":
		return Peers{}, nil
	case "exclusive":
		return Peers{BuildService: true, IntegrationService: true}, nil
	}
	return Peers{}, fmt.Errorf("executor %q: want all or exclusive (deprecated: use --nudging-peers)", x)
}

// String is the --nudging-peers value of p.
func (p Peers) String() string {
	var names []string
	if p.BuildService {
		names = append(names, string(RunnerBuildService))
	}
	if p.IntegrationService {
		names = append(names, string(RunnerIntegrationService))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// DetectPeers reads what the API server serves: integration-service runs nudges
// where its NudgeConfig kind (appstudio.redhat.com/v1beta2) is served, and
// build-service where Components (appstudio.redhat.com/v1alpha1, the kind whose
// build-nudges-ref it reads) are. A cluster serving Components without
// build-service is a test world: say --nudging-peers=none there.
func DetectPeers(mapper meta.RESTMapper) (Peers, error) {
	shipped, _, err := nudgeconfigs.Served(mapper)
	if err != nil {
		return Peers{}, err
	}
	gvk := mirrorv1alpha1.GroupVersion.WithKind("Component")
	_, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case meta.IsNoMatchError(err):
		return Peers{IntegrationService: shipped}, nil
	case err != nil:
		return Peers{}, fmt.Errorf("asking the API server whether it serves %s: %w", gvk, err)
	}
	return Peers{BuildService: true, IntegrationService: shipped}, nil
}

// EdgeSource says where an edge is declared.
type EdgeSource string

const (
	// sourceNudgeConfig: nudgeflow's own NudgeConfig (konflux-ci.dev/v1alpha1).
	sourceNudgeConfig EdgeSource = "NudgeConfig"
	// sourceShippedNudgeConfig: integration-service's (appstudio.redhat.com/v1beta2).
	sourceShippedNudgeConfig EdgeSource = "NudgeConfig.appstudio.redhat.com"
	sourceBuildNudgesRef     EdgeSource = "build-nudges-ref"
)

// FromNudgeConfig: the edge comes from a NudgeConfig of either kind.
func (s EdgeSource) FromNudgeConfig() bool {
	return s == sourceNudgeConfig || s == sourceShippedNudgeConfig
}

// Edge is one nudge relationship from a built component.
type Edge struct {
	From, To    string
	Mode        konfluxv1alpha1.NudgeMode
	GatingGroup string
	Source      EdgeSource
	// InBuildNudgesRef: the source component's build-nudges-ref names the target
	// too, so build-service nudges it wherever it does not stand down.
	InBuildNudgesRef bool
	// NewModelBuild: the build carries only ADR 69's konflux-ci.dev keys (a
	// konflux-ci.dev Component's build, konflux.PeersSeeBuild false), which neither
	// build-service nor integration-service nudges from: nudgeflow runs its edges
	// whoever is installed.
	NewModelBuild bool
}

// EdgesFrom lists the edges of component: the NudgeConfig's when one exists (it
// replaces build-nudges-ref entirely), else the component's build-nudges-ref as
// immediate edges. comp may be nil (the component does not exist or was not read).
func EdgesFrom(nc *konfluxv1alpha1.NudgeConfig, comp *mirrorv1alpha1.Component, component string) []Edge {
	var refs []string
	if comp != nil {
		refs = comp.Spec.BuildNudgesRef
	}
	var out []Edge
	if nc != nil {
		source := sourceOf(nc)
		for _, n := range nc.Spec.Nudges {
			if n.From == component {
				out = append(out, Edge{From: n.From, To: n.To, Mode: n.EffectiveMode(), GatingGroup: n.GatingGroup,
					Source: source, InBuildNudgesRef: slices.Contains(refs, n.To)})
			}
		}
		return out
	}
	for _, to := range refs {
		if to != "" && to != component {
			out = append(out, Edge{From: component, To: to, Mode: konfluxv1alpha1.ModeImmediate, Source: sourceBuildNudgesRef, InBuildNudgesRef: true})
		}
	}
	return out
}

// sourceOf is the EdgeSource of nc's edges: which kind it was read from.
func sourceOf(nc *konfluxv1alpha1.NudgeConfig) EdgeSource {
	if nudgeconfigs.IsShipped(nc) {
		return sourceShippedNudgeConfig
	}
	return sourceNudgeConfig
}

// RunnerOf says who nudges e beside these peers (see Peers).
func (p Peers) RunnerOf(e Edge) Runner {
	if e.Mode == konfluxv1alpha1.ModeValidated || e.NewModelBuild {
		return RunnerNudgeflow
	}
	switch e.Source {
	case sourceShippedNudgeConfig:
		if p.IntegrationService {
			return RunnerIntegrationService
		}
	case sourceNudgeConfig, sourceBuildNudgesRef:
		if p.BuildService && e.InBuildNudgesRef {
			return RunnerBuildService
		}
	}
	return RunnerNudgeflow
}

// Executes reports whether nudgeflow runs e's nudge itself.
func (p Peers) Executes(e Edge) bool { return p.RunnerOf(e) == RunnerNudgeflow }
