package renovate

import tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

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
func PipelineRunFor(a *Activities, req LaunchRequest, withHostRules, withCA bool) (*tektonv1.PipelineRun, RunObjects) {
	return a.pipelineRun(req, withHostRules, withCA), RunObjects{
		ConfigMap: req.Name, ConfigKey: configFile(req.Nudged),
		Secret: req.Name, TokenKey: tokenKey, HostRulesKey: hostRulesKey,
		CAConfigMap: CAConfigMapName(req.Name),
	}
}
