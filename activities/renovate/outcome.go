package renovate

import (
	"fmt"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
)

// Renovate exits 0 when it could not authenticate to the registry that holds the
// nudging image: it logs "WARN: Error obtaining docker token", opens no pull
// request, and the run looks green (seen with Renovate 39). So the step keeps
// Renovate's output, and when that line is in it writes the outcome
// OutcomeRegistryAuthFailed as the run's result ResultOutcome; StatusOf reads a
// run that succeeded with that result as failed, so the Nudge records it (a
// Warning Event on the nudged Component, the failed-run metric, retries, then
// NudgeFailed) instead of a quiet success.
const (
	// ResultOutcome is the task and pipeline result the step writes.
	ResultOutcome = "nudge-outcome"
	// OutcomeOK: Renovate exited 0 and logged no registry authentication failure.
	OutcomeOK = "ok"
	// OutcomeRegistryAuthFailed: Renovate could not get a registry token.
	OutcomeRegistryAuthFailed = "registry-auth-failed"
	// ReasonRegistryAuthFailed is RunStatus.Reason of such a run.
	ReasonRegistryAuthFailed = "RegistryAuthFailed"
	// registryAuthFailure is the line Renovate's docker datasource logs.
	registryAuthFailure = "Error obtaining docker token"
)

// withOutcomeCheck wraps Renovate's command line: its output still goes to the
// step's log, and the outcome goes to the result (Tekton's $(results...) path).
func withOutcomeCheck(renovate string) string {
	return fmt.Sprintf(`log=$(mktemp); %s 2>&1 | tee "$log"; rc=${PIPESTATUS[0]}; `+
		`if [ "$rc" -eq 0 ] && grep -qF '%s' "$log"; then printf %%s %s > $(results.%s.path); `+
		`echo 'nudgeflow: Renovate could not authenticate to the image registry and opened no pull request' >&2; `+
		`else printf %%s %s > $(results.%s.path); fi; exit "$rc"`,
		renovate, registryAuthFailure, OutcomeRegistryAuthFailed, ResultOutcome, OutcomeOK, ResultOutcome)
}

// outcomeOf reads the run's ResultOutcome ("" when the run has none: an older run,
// or another service's).
func outcomeOf(plr *tektonv1.PipelineRun) string {
	for _, r := range plr.Status.Results {
		if r.Name == ResultOutcome {
			return strings.TrimSpace(r.Value.StringVal)
		}
	}
	return ""
}

// registryAuthMessage explains a RegistryAuthFailed run to the person who reads
// the nudged Component's Events.
func registryAuthMessage(plr *tektonv1.PipelineRun) string {
	image, nudging := plr.Annotations[AnnotationNudgingImage], plr.Annotations[AnnotationNudgingComponent]
	return fmt.Sprintf("Renovate could not authenticate to the registry of %s (%q) and opened no pull request: "+
		"link a pull secret for it to ServiceAccount build-pipeline-%s in namespace %s (the registry credentials nudges use)",
		image, registryAuthFailure, nudging, plr.Namespace)
}
