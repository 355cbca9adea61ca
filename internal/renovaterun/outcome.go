package renovaterun

import (
	"fmt"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// Renovate exits 0 when it could not look up the nudging image: it logs why
// (with Renovate 39: "WARN: Error obtaining docker token" when the registry's
// token service fails, "DEBUG: Failed to get authHeaders for getTags lookup"
// when the registry wants credentials the run has none of, and in every case
// "DEBUG: Failed to look up docker package <image>"; when the registry lists the
// repository's tags but the build's tag is not among them, "DEBUG: Could not
// determine new digest for update."), opens no pull request,
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
	// OutcomeRepositoryNotUpdated: Renovate looked the image up but did not update
	// the nudged repository: it aborted the repository (RepositoryAborts) or could
	// not push the branch (BranchFailures).
	OutcomeRepositoryNotUpdated = "repository-not-updated"
	// OutcomePRNotOpened: Renovate pushed the branch but opened no pull request
	// (prFailures), and exited 0.
	OutcomePRNotOpened = "pr-not-opened"
	// ReasonRegistryAuthFailed is RunStatus.Reason of a registry-auth-failed run.
	ReasonRegistryAuthFailed = "RegistryAuthFailed"
	// ReasonImageLookupFailed is RunStatus.Reason of an image-lookup-failed run.
	ReasonImageLookupFailed = "ImageLookupFailed"
	// ReasonRepositoryNotUpdated is RunStatus.Reason of a repository-not-updated run.
	ReasonRepositoryNotUpdated = "RepositoryNotUpdated"
	// ReasonPRNotOpened is RunStatus.Reason of a pr-not-opened run.
	ReasonPRNotOpened = "PullRequestNotOpened"
	// registryAuthFailure is the line Renovate's docker datasource logs when the
	// token service fails.
	registryAuthFailure = "Error obtaining docker token"
	// ImageLookupFailure is the line Renovate logs for any failed lookup.
	ImageLookupFailure = "Failed to look up docker package"
	// DigestLookupFailure is the line Renovate logs when the lookup found the
	// repository but not the tag it follows (lib/workers/repository/process/lookup).
	DigestLookupFailure = "Could not determine new digest for update"
)

// RegistryAuthFailures are the lines of Renovate's docker datasource that say
// it could not authenticate (no or refused credentials, a failed token service).
var RegistryAuthFailures = []string{registryAuthFailure, "Failed to get authHeaders", "Unauthorized docker lookup", "No docker auth found"}

// Renovate exits 0 too when it gives up on the repository (it exits 1 only for
// what it logs at ERROR): lib/workers/repository/error.ts logs these at INFO or
// WARN and ends the repository. None of them happens on a run that updated it.
// "Repository has no package files" is not among them: the nudged repository does
// not reference the image, so there is nothing to nudge.
var RepositoryAborts = []string{
	"Repository has changed during renovation - aborting", // repository-changed: a push raced Renovate's
	"Rate limit exceeded - aborting",
	"Bad credentials - aborting",
	"Integration unauthorized - aborting",
	"Authentication error - aborting",
	"Git error - aborting",
	"Temporary error - aborting",
	"Insufficient memory - aborting",
	"External host error causing abort",
	"Repository is forbidden",
	"Repository is archived - skipping",
	"Repository is disabled - skipping",
	"Repository is blocked - skipping",
	"Repository has been renamed - skipping",
	"Repository is empty - skipping",
	"Repository is a mirror - skipping",
}

// BranchFailures are what Renovate logs when it could not write the branch but
// carries on (lib/workers/repository/update/branch/index.ts, and the GitHub
// platform's commit through the API, which a GitHub App token uses): with no
// branch yet it then reports "no-work" and opens nothing.
var BranchFailures = []string{
	"Error updating branch",
	"Platform-native commit: unknown error",
	"Platform-native commit: unable to prepare for commit",
	// pr-edited (lib/workers/repository/update/branch/index.ts): Renovate read the
	// branch's last commit as another author's and found no PR of its own for it,
	// and skips the branch: the digest reached no pull request.
	"Branch has been edited but found no PR - skipping",
	"Found old PR but the SHA is different",
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
	return fmt.Sprintf("Renovate could not look up %s (%q or %q: the tag is missing or the registry answered an error) and opened no pull request; "+
		"the PipelineRun's log says why", konflux.NudgingImageKey.Get(plr.Annotations), ImageLookupFailure, DigestLookupFailure)
}

// repositoryNotUpdatedMessage explains a RepositoryNotUpdated run.
func repositoryNotUpdatedMessage(plr *tektonv1.PipelineRun) string {
	return fmt.Sprintf("Renovate looked up %s but did not update the repository of %s (it aborted the repository or could not push its branch) "+
		"and opened or updated no pull request; the PipelineRun's log names Renovate's reason above the line starting \"nudgeflow:\"",
		konflux.NudgingImageKey.Get(plr.Annotations), konflux.NudgedKey.Get(plr.Annotations))
}

// prNotOpenedMessage explains a PullRequestNotOpened run.
func prNotOpenedMessage(plr *tektonv1.PipelineRun) string {
	return fmt.Sprintf("Renovate pushed its branch for %s to the repository of %s but opened no pull request (the forge refused it, or one exists that Renovate does not recognise as its own); "+
		"the PipelineRun's log names Renovate's reason above the line starting \"nudgeflow:\"",
		konflux.NudgingImageKey.Get(plr.Annotations), konflux.NudgedKey.Get(plr.Annotations))
}

// registryAuthMessage explains a RegistryAuthFailed run to the person who reads
// the nudged Component's Events.
func registryAuthMessage(plr *tektonv1.PipelineRun) string {
	image, nudging := konflux.NudgingImageKey.Get(plr.Annotations), konflux.NudgingKey.Get(plr.Annotations)
	return fmt.Sprintf("Renovate could not authenticate to the registry of %s (%q) and opened no pull request: "+
		"link a pull secret for it to ServiceAccount build-pipeline-%s in namespace %s (the registry credentials nudges use)",
		image, registryAuthFailure, nudging, plr.Namespace)
}

// The step's branch check (activities/renovate branchcheck.go) writes
// OutcomeSuperseded when the nudge branch already carries a newer build.
const (
	// OutcomeSuperseded: the nudge branch's head carries a newer build; the step
	// wrote nothing. The result's value is "superseded:<run>", <run> the newer
	// commit's TrailerRun (empty when it has none that is a name).
	OutcomeSuperseded = "superseded"
	// ReasonSupersededOnBranch is RunStatus.Reason of a run its step refused.
	ReasonSupersededOnBranch = "SupersededOnBranch"
	// SupersededUnnamed is RunStatus.SupersededBy when the newer commit names no run.
	SupersededUnnamed = "unnamed (the newer build's commit heads the nudge branch)"
)

// supersededOnBranch reads OutcomeSuperseded's value: whether the step refused,
// and the newer run it names.
func supersededOnBranch(outcome string) (bool, string) {
	rest, ok := strings.CutPrefix(outcome, OutcomeSuperseded)
	if !ok || (rest != "" && !strings.HasPrefix(rest, ":")) {
		return false, ""
	}
	if run := strings.TrimPrefix(rest, ":"); run != "" {
		return true, run
	}
	return true, SupersededUnnamed
}
