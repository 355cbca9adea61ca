package renovate

import (
	"fmt"
	"strings"
	"time"

	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
)

// The step itself refuses to write an older build's digest over a newer one.
// Supersession is decided on the cluster (supersede.go, supersede_release.go), but
// a run may still start after a newer build's run wrote the nudge branch: a newer
// run that ended before the older was created and was pruned, a run of another
// nudgeflow, or a push that raced the release. So nudgeflow's commit says which
// build it carries: the commit body ends with the trailers TrailerBuiltAt (the
// build's start, builtAtStamp) and TrailerRun (the run that wrote it). Before
// Renovate runs, the step fetches the nudge branch's head (git, one commit deep,
// the forge token given by a credential helper that reads it from the step's
// environment: never on a command line, in a file or in the log) and reads its
// trailers; when they name a
// build that started after this run's, the step writes OutcomeSuperseded (with the
// run the trailer names) and exits 0 without running Renovate. StatusOf reads that
// as superseded: the Nudge ends Superseded, not failed, and is not retried.
//
// Fail open: a branch that does not exist, a head without nudgeflow's trailers
// (build-service's commits, a person's), a malformed trailer or a fetch that fails
// lets Renovate run as before; Renovate writes only through the same branch, and
// the cluster's checks stand. What is left: a newer build's push landing between
// this look and Renovate's own push (seconds), which the branch queue (one run per
// branch) keeps to runs nudgeflow does not queue. A person who may push the nudge
// branch may forge the trailers, and so end nudges of older builds early; such a
// person may write the branch anyway.
const (
	// TrailerBuiltAt is the commit trailer with the start of the build whose
	// digest the commit writes (builtAtStamp).
	TrailerBuiltAt = "Nudgeflow-Built-At"
	// TrailerRun is the commit trailer naming the run that wrote the commit.
	TrailerRun = "Nudgeflow-Run"
)

// The step's environment for the check (none of it secret).
const (
	envBuiltAt = "NUDGEFLOW_BUILT_AT"
	envGitURL  = "NUDGEFLOW_GIT_URL"
	envBranch  = "NUDGEFLOW_BRANCH"
	envGitUser = "NUDGEFLOW_GIT_USER"
)

// BuiltAtStamp is a build start as the trailer and the step's environment write
// it: UTC with nine fractional digits, so that two stamps compare as strings
// (the step has bash, not a date parser).
func BuiltAtStamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000000Z")
}

// commitTrailers are the trailers of nudgeflow's commit for in ("" when the
// build's start is unknown: nothing to compare).
func commitTrailers(in ConfigInput) string {
	if in.BuiltAt.IsZero() {
		return ""
	}
	s := fmt.Sprintf("\n%s: %s", TrailerBuiltAt, BuiltAtStamp(in.BuiltAt))
	if in.Run != "" {
		s += fmt.Sprintf("\n%s: %s", TrailerRun, in.Run)
	}
	return s
}

// BranchCheck is where the step looks before Renovate writes: the nudged
// repository's git URL, and the branch Renovate pushes there.
type BranchCheck struct {
	GitURL, Platform, Branch string
}

// branchCheckOf is the check of a run nudging forge's repository.
func branchCheckOf(f forgeInfo, nudging, nudged string, simpleBranch bool) BranchCheck {
	scheme := "https"
	if strings.EqualFold(f.scheme, "http") {
		scheme = "http" // as the endpoint: a forge served over http only
	}
	return BranchCheck{GitURL: scheme + "://" + f.host + "/" + f.repository + ".git", Platform: f.platform,
		Branch: renovaterun.BranchName(nudging, nudged, simpleBranch)}
}

// gitUser is the basic-auth user name that goes with the token on platform's git
// over HTTP: what Renovate uses (GitLab wants oauth2; GitHub, Gitea and Forgejo
// read the token and ignore the name).
func gitUser(platform string) string {
	if platform == "gitlab" {
		return "oauth2"
	}
	return "x-access-token"
}

// withBranchCheck gives plr's step what the check needs; a run without it
// (the build's start unknown, a run of an older nudgeflow) runs Renovate unchecked.
func withBranchCheck(plr *tektonv1.PipelineRun, builtAt time.Time, c BranchCheck) {
	if builtAt.IsZero() || c.GitURL == "" || c.Branch == "" || plr.Spec.PipelineSpec == nil {
		return
	}
	for i := range plr.Spec.PipelineSpec.Tasks {
		t := plr.Spec.PipelineSpec.Tasks[i].TaskSpec
		if t == nil {
			continue
		}
		for j := range t.Steps {
			if t.Steps[j].Name != "renovate" {
				continue
			}
			t.Steps[j].Env = append(t.Steps[j].Env,
				corev1.EnvVar{Name: envBuiltAt, Value: BuiltAtStamp(builtAt)},
				corev1.EnvVar{Name: envGitURL, Value: c.GitURL},
				corev1.EnvVar{Name: envBranch, Value: c.Branch},
				corev1.EnvVar{Name: envGitUser, Value: gitUser(c.Platform)})
		}
	}
}

// branchCheckScript is the step's look at the nudge branch before Renovate runs
// (bash; dir is the step's temporary directory). It sets superseded to the
// outcome's value when the branch's head carries a newer build, and says so in
// the log. The token is read by the credential helper (a shell function git
// runs, which expands the variable) from the step's environment when git asks:
// it is in no argument and no file, and no program is written (a /tmp mounted
// noexec would stop one). git's own messages are dropped: a failed fetch (no
// branch yet, no access) is no finding.
func branchCheckScript() string {
	stamp := `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z$`
	name := `^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`
	return `superseded=""; ` +
		`if [ -n "${` + envBuiltAt + `:-}" ] && [ -n "${` + envGitURL + `:-}" ] && [ -n "${` + envBranch + `:-}" ]; then ` +
		`if git init -q "$dir/head" >/dev/null 2>&1 && GIT_TERMINAL_PROMPT=0 git -C "$dir/head" -c credential.helper= ` +
		`-c 'credential.helper=!f() { echo "username=$` + envGitUser + `"; echo "password=$` + secretEnvPrefix + tokenKey + `"; }; f' ` +
		`fetch -q --no-tags --depth=1 "$` + envGitURL + `" "refs/heads/$` + envBranch + `" >/dev/null 2>&1; then ` +
		`tip=$(git -C "$dir/head" rev-parse --short=12 FETCH_HEAD); ` +
		`run=$(git -C "$dir/head" log -1 --format='%(trailers:key=` + TrailerRun + `,valueonly)' FETCH_HEAD | head -n1); ` +
		`stamp_re='` + stamp + `'; name_re='` + name + `'; [[ "$run" =~ $name_re ]] || run=""; ` +
		`for at in $(git -C "$dir/head" log -1 --format='%(trailers:key=` + TrailerBuiltAt + `,valueonly)' FETCH_HEAD); do ` +
		`if [[ "$at" =~ $stamp_re ]] && [[ "${at//[^0-9]/}" > "${` + envBuiltAt + `//[^0-9]/}" ]]; then ` +
		`superseded="` + renovaterun.OutcomeSuperseded + `:$run"; ` +
		`echo "nudgeflow: branch $` + envBranch + ` holds commit $tip of a build started $at (run ${run:-unnamed}), newer than this run's build (started $` + envBuiltAt + `): not writing the older digest over it" >&2; ` +
		`break; fi; done; fi; fi; `
}
