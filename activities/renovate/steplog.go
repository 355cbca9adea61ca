package renovate

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// The step reads Renovate's own structured log, not its console output. Renovate
// writes a JSON line per record (bunyan: "msg", "level", and the record's fields)
// to LOG_FILE at LOG_FILE_LEVEL, beside the human console log that tenants read in
// the Konflux UI. Only each record's msg is compared, and whole: the console log
// at debug also holds values (the nudged repository's latest commit message,
// lib/util/git/index.ts "latest repository commit"; error bodies), so a commit
// titled "fix: Error updating branch" would fail every nudge of that repository
// if the text of the whole log were searched. The image has node (Renovate is a
// node program) and no jq, so node reads the file.
const (
	// stepLogFile is the file name of Renovate's JSON log in the step's temporary
	// directory.
	stepLogFile = "renovate-log.ndjson"
)

// prFailures are what Renovate 39 logs when it pushed the branch but opened no
// pull request, and still exits 0 (lib/workers/repository/update/pr/index.ts).
var prFailures = []string{
	"Pull request creation error",
	"A pull requests already exists", // sic
	"Failed to ensure PR",
	"Deleting branch due to server error",
}

// noChangesLine is what Renovate logs before "Platform-native commit: unable to
// prepare for commit" when the branch already holds the change
// (lib/util/git/index.ts prepareCommit): nothing failed then.
const noChangesLine = "No file changes detected"

// unablePrepare is the branch failure that noChangesLine excuses.
const unablePrepare = "Platform-native commit: unable to prepare for commit"

// stepPatterns are the message prefixes the node program looks for, by kind.
type stepPatterns struct {
	Auth      []string `json:"auth"`
	Lookup    []string `json:"lookup"`
	Abort     []string `json:"abort"`
	Branch    []string `json:"branch"`
	PR        []string `json:"pr"`
	NoChanges string   `json:"noChanges"`
	Prepare   string   `json:"prepare"`
}

// outcomeProgram is the node program that reads Renovate's JSON log (its one
// argument) and prints the outcome; it says on stderr which record decided it.
// The rules, in order:
//   - the lookup of the nudging image failed ("Failed to look up docker package",
//     "Could not determine new digest for update"): registry-auth-failed when a
//     record says the registry refused credentials, else image-lookup-failed. An
//     authentication record alone is no failure: Renovate also logs "Unauthorized
//     docker lookup" for its best-effort label lookup of another tag
//     (lib/modules/datasource/docker/index.ts), and the nudge lands;
//   - Renovate aborted the repository, or could not write the branch (but
//     "unable to prepare for commit" after "No file changes detected" is the
//     branch being current already): repository-not-updated;
//   - it pushed the branch and opened no pull request: pr-not-opened;
//   - else ok. A missing or unreadable log is ok too: Renovate's exit code speaks
//     then, and the forge's state decides delivery (delivery.go).
//
// It holds no single quote, so bash takes it single-quoted.
func outcomeProgram() string {
	p, err := json.Marshal(stepPatterns{
		Auth:      renovaterun.RegistryAuthFailures,
		Lookup:    []string{renovaterun.ImageLookupFailure, renovaterun.DigestLookupFailure},
		Abort:     renovaterun.RepositoryAborts,
		Branch:    renovaterun.BranchFailures,
		PR:        prFailures,
		NoChanges: noChangesLine,
		Prepare:   unablePrepare,
	})
	if err != nil {
		panic(err) // static data
	}
	prog := `const fs=require("fs");const P=` + string(p) + `;` +
		`let text="";try{text=fs.readFileSync(process.argv[1],"utf8")}catch(e){process.stdout.write("` + renovaterun.OutcomeOK + `");process.exit(0)}` +
		`const first={};let noChanges=false;` +
		`const is=(m,l)=>l.some(p=>m===p||m.startsWith(p));` +
		`for(const line of text.split("\n")){if(!line.trim())continue;let r;try{r=JSON.parse(line)}catch(e){continue}` +
		`const m=typeof r.msg==="string"?r.msg:"";if(!m)continue;` +
		`if(m.startsWith(P.noChanges))noChanges=true;` +
		`for(const k of ["auth","lookup","abort","branch","pr"]){if(first[k]===undefined&&is(m,P[k])&&!(k==="branch"&&m.startsWith(P.prepare)&&noChanges))first[k]=m}}` +
		`let out="` + renovaterun.OutcomeOK + `",why="";` +
		`if(first.lookup!==undefined){out=first.auth!==undefined?"` + renovaterun.OutcomeRegistryAuthFailed + `":"` + renovaterun.OutcomeImageLookupFailed + `";why=first.auth!==undefined?first.auth:first.lookup}` +
		`else if(first.abort!==undefined){out="` + renovaterun.OutcomeRepositoryNotUpdated + `";why=first.abort}` +
		`else if(first.branch!==undefined){out="` + renovaterun.OutcomeRepositoryNotUpdated + `";why=first.branch}` +
		`else if(first.pr!==undefined){out="` + renovaterun.OutcomePRNotOpened + `";why=first.pr}` +
		`if(why)process.stderr.write("nudgeflow: Renovate logged: "+why+"\n");process.stdout.write(out);`
	if strings.Contains(prog, "'") {
		panic("outcomeProgram holds a single quote")
	}
	return prog
}

// stepMessages are the lines the step adds to its log for each failed outcome.
var stepMessages = map[string]string{
	renovaterun.OutcomeRegistryAuthFailed:   "nudgeflow: Renovate could not authenticate to the image registry and opened no pull request",
	renovaterun.OutcomeImageLookupFailed:    "nudgeflow: Renovate could not look up the nudging image and opened no pull request",
	renovaterun.OutcomeRepositoryNotUpdated: "nudgeflow: Renovate did not update the repository (the line above says why) and opened or updated no pull request",
	renovaterun.OutcomePRNotOpened:          "nudgeflow: Renovate pushed its branch but opened no pull request (the line above says why)",
}

// withOutcomeCheck wraps Renovate's command line: its console output still goes
// to the step's log as it is (LOG_LEVEL), its JSON log to a file of the step's
// (LOG_FILE at LOG_FILE_LEVEL=debug), which node reads for the outcome; the
// outcome goes to the result (Tekton's $(results...) path). Renovate's exit code
// is the step's. Renovate 39 lower-cases the values of its logger's variables,
// LOG_FILE included (lib/logger/utils.ts getEnv), and writes where that path
// points, so node reads the lower-cased path (mktemp's name has capitals).
// Before Renovate, the step looks at the nudge branch (branchcheck.go): when its
// head carries a newer build, Renovate does not run and the outcome says so.
func withOutcomeCheck(renovate string) string {
	var cases strings.Builder
	for _, o := range []string{renovaterun.OutcomeRegistryAuthFailed, renovaterun.OutcomeImageLookupFailed, renovaterun.OutcomeRepositoryNotUpdated, renovaterun.OutcomePRNotOpened} {
		fmt.Fprintf(&cases, `%s) echo '%s' >&2;; `, o, stepMessages[o])
	}
	return fmt.Sprintf(`dir=$(mktemp -d); %s`+
		`if [ -n "$superseded" ]; then printf %%s "$superseded" > $(results.%s.path); exit 0; fi; `+
		`export LOG_FILE="$dir/%s" LOG_FILE_LEVEL=debug; %s 2>&1; rc=$?; outcome=%s; `+
		`if [ "$rc" -eq 0 ]; then outcome=$(node -e '%s' "$(printf %%s "$LOG_FILE" | tr '[:upper:]' '[:lower:]')") || outcome=%s; case "$outcome" in %sesac; fi; `+
		`printf %%s "$outcome" > $(results.%s.path); exit "$rc"`,
		branchCheckScript(), renovaterun.ResultOutcome, stepLogFile, renovate, renovaterun.OutcomeOK, outcomeProgram(), renovaterun.OutcomeOK, cases.String(), renovaterun.ResultOutcome)
}
