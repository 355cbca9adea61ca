package renovate

import (
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
)

// RunObjects names what a Renovate PipelineRun reads, so the test world's
// PipelineRun runner (test/plrunner) can be fed the very run nudgeflow writes
// without copying its layout.
type RunObjects struct {
	// ConfigMap (volume "configs") holds ConfigKey, the Renovate config.
	ConfigMap, ConfigKey string
	// Secret (envFrom) holds TokenKey, the forge token, and, for a run made
	// withHostRules, HostRulesKey: the registry host rules (JSON, see HostRule).
	Secret, TokenKey, HostRulesKey string
	// CAConfigMap holds CABundleKey when the run mounts the trusted CA.
	CAConfigMap string
}

// PipelineRunFor is the PipelineRun a's LaunchRenovate creates for req, and the
// objects it reads. A function, not a method: every exported method of
// Activities is registered as an activity, and this is none.
// check is where the step looks for a newer build before Renovate writes, as
// LaunchRenovate derives it from the nudged Component (zero: no look).
func PipelineRunFor(a *Activities, req renovateapi.LaunchRequest, withHostRules, withCA bool, check BranchCheck) (*tektonv1.PipelineRun, RunObjects) {
	plr := a.pipelineRun(req, withHostRules, withCA)
	withBranchCheck(plr, req.BuiltAt, check)
	return plr, RunObjects{
		ConfigMap: req.Name, ConfigKey: configFile(req.Nudged),
		Secret: req.Name, TokenKey: tokenKey, HostRulesKey: hostRulesKey,
		CAConfigMap: CAConfigMapName(req.Name),
	}
}
