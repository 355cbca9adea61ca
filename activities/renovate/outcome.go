package renovate

import (
	"fmt"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
)

// Renovate exits 0 when it could not look up the nudging image: it logs why
// (with Renovate 39: "WARN: Error obtaining docker token" when the registry's
// token service fails, "DEBUG: Failed to get authHeaders for getTags lookup"
// when the registry wants credentials the run has none of, and in every case
// "DEBUG: Failed to look up docker package <image>"), opens no pull request,
// and the run looks green. Only the nudging image is looked up (the config
// disables every other package), so any such line is about it. The step keeps
// Renovate's output, writes the outcome as the run's result ResultOutcome and
// says in its log what went wrong; StatusOf reads a run that succeeded with a
// failed outcome as failed, so the Nudge records it (a Warning Event on the
// nudged Component, the failed-run metric, retries, then NudgeFailed) instead
// of a quiet success. The DEBUG lines are there because the step runs Renovate
// with LOG_LEVEL=debug, as build-service does.
const (
	// ResultOutcome is the task and pipeline result the step writes.
	ResultOutcome = "nudge-outcome"
	// OutcomeOK: Renovate exited 0 and logged no failed lookup of the image.
	OutcomeOK = "ok"
	// OutcomeRegistryAuthFailed: Renovate could not authenticate to the image's registry.
	OutcomeRegistryAuthFailed = "registry-auth-failed"
	// OutcomeImageLookupFailed: Renovate could not look the image up for another
	// reason (the tag is missing, the registry answered an error).
	OutcomeImageLookupFailed = "image-lookup-failed"
	// ReasonRegistryAuthFailed is RunStatus.Reason of a registry-auth-failed run.
	ReasonRegistryAuthFailed = "RegistryAuthFailed"
	// ReasonImageLookupFailed is RunStatus.Reason of an image-lookup-failed run.
	ReasonImageLookupFailed = "ImageLookupFailed"
	// registryAuthFailure is the line Renovate's docker datasource logs when the
	// token service fails.
	registryAuthFailure = "Error obtaining docker token"
	// imageLookupFailure is the line Renovate logs for any failed lookup.
	imageLookupFailure = "Failed to look up docker package"
)

// registryAuthFailures are the lines of Renovate's docker datasource that say
// it could not authenticate (no or refused credentials, a failed token service).
var registryAuthFailures = []string{registryAuthFailure, "Failed to get authHeaders", "Unauthorized docker lookup", "No docker auth found"}

// withOutcomeCheck wraps Renovate's command line: its output still goes to the
// step's log, and the outcome goes to the result (Tekton's $(results...) path).
func withOutcomeCheck(renovate string) string {
	var authPatterns string
	for _, p := range registryAuthFailures {
		authPatterns += fmt.Sprintf(" -e '%s'", p)
	}
	return fmt.Sprintf(`log=$(mktemp); %s 2>&1 | tee "$log"; rc=${PIPESTATUS[0]}; outcome=%s; `+
		`if [ "$rc" -eq 0 ] && grep -qF%s "$log"; then outcome=%s; `+
		`echo 'nudgeflow: Renovate could not authenticate to the image registry and opened no pull request' >&2; `+
		`elif [ "$rc" -eq 0 ] && grep -qF '%s' "$log"; then outcome=%s; `+
		`echo 'nudgeflow: Renovate could not look up the nudging image and opened no pull request' >&2; fi; `+
		`printf %%s "$outcome" > $(results.%s.path); exit "$rc"`,
		renovate, OutcomeOK, authPatterns, OutcomeRegistryAuthFailed, imageLookupFailure, OutcomeImageLookupFailed, ResultOutcome)
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

// imageLookupMessage explains an ImageLookupFailed run.
func imageLookupMessage(plr *tektonv1.PipelineRun) string {
	return fmt.Sprintf("Renovate could not look up %s (%q: the tag is missing or the registry answered an error) and opened no pull request; "+
		"the PipelineRun's log says why", plr.Annotations[AnnotationNudgingImage], imageLookupFailure)
}

// registryAuthMessage explains a RegistryAuthFailed run to the person who reads
// the nudged Component's Events.
func registryAuthMessage(plr *tektonv1.PipelineRun) string {
	image, nudging := plr.Annotations[AnnotationNudgingImage], plr.Annotations[AnnotationNudgingComponent]
	return fmt.Sprintf("Renovate could not authenticate to the registry of %s (%q) and opened no pull request: "+
		"link a pull secret for it to ServiceAccount build-pipeline-%s in namespace %s (the registry credentials nudges use)",
		image, registryAuthFailure, nudging, plr.Namespace)
}
