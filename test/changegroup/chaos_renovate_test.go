package changegroup_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	"github.com/nudgeflow/nudgeflow/test/plrunner"
)

// The chaos seeds' Renovate: a scripted stand-in run by test/plrunner for
// nudgeflow's Renovate PipelineRuns (its own Nudges' and hand-backs'). Real
// Renovate costs ~6 s of CPU a run on this machine's 2 cores, too much for
// dozens of runs a seed; the contract tests (test/nudges/renovate) run the real
// one for each outcome scripted here.
//
// What stays real: the PipelineRun nudgeflow created, run by plrunner as Tekton
// would (ConfigMap and Secret volumes, envFrom, results), and the STEP ITSELF:
// nudgeflow's own step command runs, with a fake `renovate` first on PATH that
// prints the Renovate-shaped log this runner scripted for the run and exits with
// its code. So what the step reports (its result, the run's status) is decided by
// nudgeflow's step exactly as in production; only what Renovate logs and writes
// is scripted. The forge writes Renovate would make (push the nudge branch with
// the digest bumped, open or update the PR with its labels) are made in the
// process on the GitHub emulator before the step runs (scriptedRun).

// chaosFault is one kind of Renovate fault the seeds inject.
type chaosFault string

const (
	// faultPRRefused: the forge refuses the PR's creation once; Renovate logs
	// "Pull request creation error" and exits 0 with the branch pushed.
	faultPRRefused chaosFault = "pr-refused-once"
	// faultPR502: the PR's creation meets a 502; Renovate logs "Deleting branch
	// due to server error", deletes the branch and exits 0.
	faultPR502 chaosFault = "pr-502"
	// faultTagNotPushed: the build's tag is not in the registry yet: the lookup
	// fails ("Failed to look up docker package"), the retry finds it.
	faultTagNotPushed chaosFault = "tag-not-pushed"
	// faultLabel401: the best-effort label lookup of another tag is refused
	// ("Unauthorized docker lookup"); the update itself lands. Must not fail the run.
	faultLabel401 chaosFault = "label-lookup-401"
	// faultCommitQuotesFailure: the base branch's latest commit is titled "fix:
	// Error updating branch", which Renovate's debug log quotes. Must not fail the run.
	faultCommitQuotesFailure chaosFault = "commit-message-quotes-error"
	// faultBuildsRace: two builds of one component race to its nudge branch (the
	// older one's Nudge starts last). Nothing older may overwrite newer.
	faultBuildsRace chaosFault = "builds-race"
	// faultPrunedHeldBuild: a build PipelineRun is deleted while a group holds its
	// nudge; the build must still be delivered (collected or handed back).
	faultPrunedHeldBuild chaosFault = "pruned-build-held-nudge"
)

// allChaosFaults are every kind, in the order the seeds pick them.
var allChaosFaults = []chaosFault{faultPRRefused, faultPR502, faultTagNotPushed, faultLabel401,
	faultCommitQuotesFailure, faultBuildsRace, faultPrunedHeldBuild}

// failingOnMain are the kinds a known gap of main gets wrong, off unless
// NUDGEFLOW_CHAOS_FAULTS turns them on ("all", or a comma-separated list of
// kinds). None today: each kind passes (pr-refused-once and
// pr-502: delivery decided by the forge; label-lookup-401 and
// commit-message-quotes-error: the step reads Renovate's JSON log; builds-race:
// supersession checked again at release; pruned-build-held-nudge: a handed-back
// build is proven by its group's status).
var failingOnMain = map[chaosFault]bool{}

// enabledChaosFaults are the kinds this run injects.
func enabledChaosFaults() map[chaosFault]bool {
	on := map[chaosFault]bool{}
	env := strings.TrimSpace(os.Getenv("NUDGEFLOW_CHAOS_FAULTS"))
	for _, k := range allChaosFaults {
		if (env == "" && !failingOnMain[k]) || env == "all" {
			on[k] = true
		}
	}
	if env != "" && env != "all" {
		for _, k := range strings.Split(env, ",") {
			on[chaosFault(strings.TrimSpace(k))] = true
		}
	}
	return on
}

// runnerFault: a fault the runner injects into a run (the others are the scenario's).
func runnerFault(k chaosFault) bool { return k != faultBuildsRace && k != faultPrunedHeldBuild }

// registryEntry is what the scripted registry knows of a build's tag.
type registryEntry struct {
	component, digest string
	builtAt           time.Time
}

// logRecord is one line Renovate logs.
type logRecord struct {
	level, msg string
}

// scriptedRenovate runs one scenario's Renovate PipelineRuns.
type scriptedRenovate struct {
	t      *testing.T
	s      *scenario
	dir    string
	runner *plrunner.Runner
	stop   func() error

	mu sync.Mutex
	// registry: build PipelineRun name -> its image (the tag Renovate looks up;
	// each build's tag is its own, as PaC's on-push-<sha> tags are).
	registry map[string]registryEntry
	// planned: build name -> the fault its next run of one of the test's own
	// Nudges meets (their retry backoff is short; a hand-back's is five minutes).
	planned map[string]chaosFault
	// own are the workflow IDs of the Nudges the test started itself.
	own map[string]bool
	// injected counts each kind injected; faulted names the runs that met a fault
	// that must not fail them.
	injected map[chaosFault]int
	faulted  map[string]chaosFault
	// rolledBack lists the pushes that wrote an older build's digest over a newer one's.
	rolledBack []string
}

// startScriptedRenovate runs the scenario's namespace's nudgeflow Renovate runs
// until the test ends.
func startScriptedRenovate(t *testing.T, s *scenario) *scriptedRenovate {
	// Under the world's log folder, kept when a test fails: each run's log
	// (runs/<ns>/<run>.log) and what the script did (scripted/trace.log).
	dir := filepath.Join(s.w.LogDir, "scripted-renovate", s.ns)
	tools := filepath.Join(dir, "bin")
	require.NoError(t, os.MkdirAll(tools, 0o755))
	// The fake renovate: the run is named by the path plrunner gives its config
	// volume (<state>/work/<ns>/<run>/<task>/volumes/...); it prints the console
	// log scripted for that run, copies the JSON log to LOG_FILE when the step asks
	// for one, and exits with the scripted code.
	fake := `#!/bin/bash
rel=${RENOVATE_CONFIG_FILE#"$NUDGEFLOW_SCRIPTED_STATE"/work/}
run=$(echo "$rel" | cut -d/ -f1-2)
out="$NUDGEFLOW_SCRIPTED_STATE/scripted/$run"
cat "$out.console"
if [ -n "$LOG_FILE" ]; then lf=$(printf %s "$LOG_FILE" | tr '[:upper:]' '[:lower:]'); mkdir -p "$(dirname "$lf")"; cp "$out.json" "$lf"; fi
exit "$(cat "$out.rc")"
`
	require.NoError(t, os.WriteFile(filepath.Join(tools, "renovate"), []byte(fake), 0o755))
	c, err := ctrlclient.NewWithWatch(s.w.Config(), ctrlclient.Options{Scheme: kube.NewScheme()})
	require.NoError(t, err)
	sr := &scriptedRenovate{t: t, s: s, dir: dir, registry: map[string]registryEntry{}, planned: map[string]chaosFault{},
		own: map[string]bool{}, injected: map[chaosFault]int{}, faulted: map[string]chaosFault{}}
	sr.runner = &plrunner.Runner{Client: c, StateDir: dir, ToolPath: tools, Namespace: s.ns,
		Env: append(os.Environ(), "NUDGEFLOW_SCRIPTED_STATE="+dir),
		// Only nudgeflow's runs: build-service's (the scenario's s.nudge) are
		// intercepted by the bridge or stand for build-service's own nudge.
		Select: func(plr *tektonv1.PipelineRun) bool {
			return plr.Labels[renovate.LabelManagedBy] == renovate.ManagedByNudgeflow
		},
		BeforeRun: sr.scriptedRun,
	}
	sr.stop = sr.runner.Start(context.Background())
	t.Cleanup(func() { require.NoError(t, sr.stop()) })
	return sr
}

// push records a build's tag in the registry.
func (sr *scriptedRenovate) push(build, component, digest string, builtAt time.Time) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.registry[build] = registryEntry{component: component, digest: digest, builtAt: builtAt}
}

// plan makes the next run of build by one of the test's own Nudges meet fault.
func (sr *scriptedRenovate) plan(build string, fault chaosFault) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.planned[build] = fault
}

// ownNudge records a Nudge the test started.
func (sr *scriptedRenovate) ownNudge(workflowID string) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.own[workflowID] = true
}

// count records a scenario-level fault.
func (sr *scriptedRenovate) count(k chaosFault) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.injected[k]++
}

// takeFault is the fault planned for this run, if it is one of the test's own.
func (sr *scriptedRenovate) takeFault(plr *tektonv1.PipelineRun, build string) chaosFault {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	k, ok := sr.planned[build]
	if !ok || !sr.own[plr.Annotations[renovate.AnnotationWorkflowID]] {
		return ""
	}
	delete(sr.planned, build)
	sr.injected[k]++
	if k == faultLabel401 || k == faultCommitQuotesFailure {
		sr.faulted[plr.Name] = k
	}
	return k
}

// chaosCSV is the file of the bundle's repository that references the images.
const chaosCSV = "bundle/manifests/operator.clusterserviceversion.yaml"

// nudgeBranch is Renovate's branch for nudging's updates of nudged (build-service's
// group naming: branchPrefix + additionalBranchPrefix + the group's slug).
func nudgeBranch(nudged, nudging string) string {
	return renovate.BranchPrefix + nudged + "-component-update-" + nudging
}

// scriptedRun is what Renovate does for plr, against the forge, before the step
// prints its log: the run's BeforeRun.
func (sr *scriptedRenovate) scriptedRun(ctx context.Context, plr *tektonv1.PipelineRun) error {
	records, rc, err := sr.renovate(ctx, plr)
	if err != nil {
		return err
	}
	console, jsonLog := renovateLogs(records)
	out := filepath.Join(sr.dir, "scripted", plr.Namespace, plr.Name)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	sr.trace("%s build %s workflow %s: exit %d, last line %q", plr.Name, konflux.NudgingPipelineKey.Get(plr.Annotations),
		plr.Annotations[renovate.AnnotationWorkflowID], rc, records[len(records)-1].msg)
	for ext, body := range map[string]string{".console": console, ".json": jsonLog, ".rc": fmt.Sprint(rc)} {
		if err := os.WriteFile(out+ext, []byte(body), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// trace appends a line to scripted/trace.log.
func (sr *scriptedRenovate) trace(format string, args ...any) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(sr.dir, "scripted", "trace.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, time.Now().Format("15:04:05.000 ")+format+"\n", args...)
}

// renovateLogs renders what Renovate logs: the console log tenants read (LOG_LEVEL
// debug, as the step runs it) and the JSON log (LOG_FILE, one object a line with
// Renovate's bunyan level numbers). This, with the records renovate returns, is
// the one place that says what the step sees of a run.
func renovateLogs(records []logRecord) (console, jsonLog string) {
	levels := map[string]int{"DEBUG": 20, "INFO": 30, "WARN": 40, "ERROR": 50}
	var c, j strings.Builder
	for _, r := range records {
		fmt.Fprintf(&c, "%s: %s\n", r.level, r.msg)
		b, _ := json.Marshal(map[string]any{"name": "renovate", "level": levels[r.level], "msg": r.msg, "logContext": "chaos"})
		j.Write(b)
		j.WriteByte('\n')
	}
	return c.String(), j.String()
}

// renovate plays one Renovate run: it writes to the forge what Renovate would and
// returns the lines it logs and its exit code.
func (sr *scriptedRenovate) renovate(ctx context.Context, plr *tektonv1.PipelineRun) ([]logRecord, int, error) {
	s := sr.s
	nudging, nudged := konflux.NudgingKey.Get(plr.Annotations), konflux.NudgedKey.Get(plr.Annotations)
	build := konflux.NudgingPipelineKey.Get(plr.Annotations)
	image := digestref.ParseReference(konflux.NudgingImageKey.Get(plr.Annotations))
	cfg, err := sr.config(ctx, plr, nudged)
	if err != nil {
		return nil, 0, err
	}
	base := "main"
	if len(cfg.Repositories) > 0 && len(cfg.Repositories[0].BaseBranches) > 0 {
		base = cfg.Repositories[0].BaseBranches[0]
	}
	fault := sr.takeFault(plr, build)
	if fault != "" {
		sr.trace("%s meets %s", plr.Name, fault)
	}
	logs := []logRecord{{"INFO", "Repository started"}}
	if fault == faultCommitQuotesFailure {
		// A person's commit on the base branch titled with a failure line.
		if _, err := shared.emu.HumanCommit(s.ns, nudged, base, githubemu.User{Login: "alice", Name: "Alice", Email: "alice@example.com"},
			map[string]string{"CHANGELOG.md": "a fix\n"}, "fix: Error updating branch"); err != nil {
			return nil, 0, err
		}
	}
	head, _ := shared.emu.Head(s.ns, nudged, base)
	logs = append(logs, logRecord{"DEBUG", fmt.Sprintf("latest commit (branch: %s, sha: %s, message: %s)", base, head.SHA, head.Message)})
	sr.mu.Lock()
	entry, pushed := sr.registry[build]
	sr.mu.Unlock()
	if !pushed || entry.component != nudging || fault == faultTagNotPushed {
		return append(logs,
			logRecord{"DEBUG", "Failed to look up docker package " + image.Repository},
			logRecord{"DEBUG", "Could not determine new digest for update."},
			logRecord{"INFO", "Repository finished"}), 0, nil
	}
	if fault == faultLabel401 {
		logs = append(logs, logRecord{"DEBUG", "Unauthorized docker lookup (getLabels of " + image.Repository + ":latest)"})
	}
	body, ok := shared.emu.FileAt(s.ns, nudged, base, chaosCSV)
	if !ok {
		return append(logs, logRecord{"INFO", "Repository has no package files"}), 0, nil
	}
	current := csvDigest(body, image.Repository)
	if current == "" || current == entry.digest {
		return append(logs, logRecord{"DEBUG", fmt.Sprintf("%s is already at %s: no update", image.Repository, current)},
			logRecord{"INFO", "Repository finished"}), 0, nil
	}
	updated := strings.ReplaceAll(body, image.Repository+"@"+current, image.Repository+"@"+entry.digest)
	branch := nudgeBranch(nudged, nudging)
	if onBranch, exists := shared.emu.FileAt(s.ns, nudged, branch, chaosCSV); !exists || onBranch != updated {
		// Renovate proposes whatever digest the tag has: an older build's run would
		// take the branch, or the base, backwards.
		sr.checkRollback(nudged, branch, onBranch, image.Repository, entry)
		sr.checkRollback(nudged, base, body, image.Repository, entry)
		msg := fmt.Sprintf("chore(deps): update %s digest to %s", nudging, entry.digest[7:14])
		if _, err := shared.emu.PushBotBranch(s.ns, nudged, branch, base, githubemu.User{Login: "nudgeflow[bot]", Name: bot.Name, Email: bot.Email},
			map[string]string{chaosCSV: updated}, msg); err != nil {
			return nil, 0, err
		}
		logs = append(logs, logRecord{"INFO", "Branch updated"})
	} else {
		logs = append(logs, logRecord{"DEBUG", "Branch " + branch + " is up to date"})
	}
	switch fault {
	case faultPRRefused:
		return append(logs, logRecord{"WARN", "Pull request creation error"}, logRecord{"INFO", "Repository finished"}), 0, nil
	case faultPR502:
		shared.emu.DeleteBotBranch(s.ns, nudged, branch)
		return append(logs, logRecord{"WARN", "Deleting branch due to server error"}, logRecord{"INFO", "Repository finished"}), 0, nil
	}
	title := fmt.Sprintf("chore(deps): update %s to %s", nudging, entry.digest[7:14])
	if _, created, err := shared.emu.EnsureBotPR(s.ns, nudged, branch, base, githubemu.User{Login: "nudgeflow[bot]", Name: bot.Name, Email: bot.Email},
		title, "Image created from ''\n\nThis is Konflux nudging PR, not Mintmaker.", cfg.Labels); err != nil {
		return nil, 0, err
	} else if created {
		logs = append(logs, logRecord{"INFO", "PR created"})
	} else {
		logs = append(logs, logRecord{"DEBUG", "Pull Request is up to date"})
	}
	return append(logs, logRecord{"INFO", "Repository finished"}), 0, nil
}

// checkRollback records a push of the nudge branch that replaces a newer build's
// digest, as ref (the branch, or the base it proposes to change) has it, with an
// older build's.
func (sr *scriptedRenovate) checkRollback(nudged, branch, onBranch, repo string, next registryEntry) {
	was := csvDigest(onBranch, repo)
	sr.mu.Lock()
	defer sr.mu.Unlock()
	for _, e := range sr.registry {
		if e.component == next.component && e.digest == was && e.builtAt.After(next.builtAt) {
			sr.rolledBack = append(sr.rolledBack, fmt.Sprintf("%s of %s: %s (build %s, built %s) over %s (built %s)", branch, nudged,
				next.digest[:19], next.component, next.builtAt.Format("15:04:05.000"), was[:19], e.builtAt.Format("15:04:05.000")))
			return
		}
	}
}

// config reads the run's Renovate config (the ConfigMap named like it).
func (sr *scriptedRenovate) config(ctx context.Context, plr *tektonv1.PipelineRun, nudged string) (renovate.Config, error) {
	var cm corev1.ConfigMap
	var cfg renovate.Config
	if err := sr.runner.Client.Get(ctx, types.NamespacedName{Namespace: plr.Namespace, Name: plr.Name}, &cm); err != nil {
		return cfg, fmt.Errorf("reading the run's config: %w", err)
	}
	if err := json.Unmarshal([]byte(cm.Data[nudged+".json"]), &cfg); err != nil {
		return cfg, fmt.Errorf("parsing the run's config: %w", err)
	}
	return cfg, nil
}

var csvImage = regexp.MustCompile(`image: (\S+)`)

// csvDigest is the digest the CSV references repo at ("" when it does not).
func csvDigest(body, repo string) string {
	for _, m := range csvImage.FindAllStringSubmatch(body, -1) {
		if ref := digestref.ParseReference(m[1]); ref.Repository == repo {
			return ref.Digest
		}
	}
	return ""
}

// misread lists the runs that met a fault that must not fail them and were read
// as failed anyway.
func (sr *scriptedRenovate) misread() []string {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	var out []string
	for name, k := range sr.faulted {
		var plr tektonv1.PipelineRun
		if err := sr.s.w.Kube.Get(context.Background(), types.NamespacedName{Namespace: sr.s.ns, Name: name}, &plr); err != nil {
			continue
		}
		if st := renovaterun.StatusOf(&plr); st.Done && !st.Succeeded && !st.Cancelled && st.SupersededBy == "" {
			out = append(out, fmt.Sprintf("run %s (%s) read as failed: %s: %s", name, k, st.Reason, st.Message))
		}
	}
	sort.Strings(out)
	return out
}

// deliveredOnForge: the build's digest is on the base branch, or in an open or
// merged pull request of its nudge branch (the forge's state, not the run's).
func deliveredOnForge(s *scenario, component, digest string) bool {
	repo := imageOf(component)
	if body, ok := shared.emu.FileAt(s.ns, "bundle", "main", chaosCSV); ok && csvDigest(body, repo) == digest {
		return true
	}
	branch := nudgeBranch("bundle", component)
	for _, pr := range shared.emu.PRs(s.ns, "bundle") {
		if pr.Head != branch || (pr.State != "open" && !pr.Merged) {
			continue
		}
		if body, ok := shared.emu.FileAt(s.ns, "bundle", pr.HeadSHA, chaosCSV); ok && csvDigest(body, repo) == digest {
			return true
		}
	}
	return false
}
