package renovate_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/contracts/nudgewriteapi"
	"github.com/nudgeflow/nudgeflow/test/landingforge"
	"github.com/nudgeflow/nudgeflow/test/localenv"
)

// localenvForgejoBot is the Gitea bot's login, the author of Renovate's comments.
const localenvForgejoBot = localenv.ForgejoBot

// TestNudgeDiff is the differential test of the direct writer, with the real
// Renovate as the oracle (issue 35, item 3): every case's repository is created
// alike in two tenants on one forge (the real Gitea; the GitHub emulator for
// the forge-specific cases); each build of the case is written into one
// tenant's repository by the Renovate PipelineRun nudgeflow launches (the
// pinned Renovate, run by test/plrunner) and into the other's by the direct
// writer; after each step both repositories are read back through the forge's
// API and compared: every pull request's branch, base, state, draft, merged,
// title, labels, body (header, middle and footer, each its own field, and the
// hidden renovate-debug data Renovate reads back), its timeline, its commits
// above main (author, committer, subject, body), the branch's whole tree file
// by file, and the branches besides main. Normalised first, and only: the
// tenant's name (the organisation), the PR's number (compared as "the same PR
// as the previous step" instead), commit SHAs and dates (not read) and the
// Nudgeflow-Run trailer's value (the run's or workflow's own name); on Gitea a
// push the timeline records twice by timing is one (onePushRecord). A
// difference fails the test unless it is one of deliberateDifferences, which
// docs/nudging.md lists too. It prints one line:
// nudge-diff repos=N cases=C identical=I deliberate=D unexplained=U.
// The counts are of the whole test: run it whole, not one subtest.
func TestNudgeDiff(t *testing.T) {
	d := newDiffWorld(t)
	var (
		mu      sync.Mutex
		results []stepResult
	)
	repos, steps := 0, 0
	t.Run("cases", func(t *testing.T) {
		for _, forge := range diffForges {
			t.Run(forge, func(t *testing.T) {
				t.Parallel()
				p := d.pair(t, startDiffForge(t, forge), writeDirect)
				for _, c := range diffCases() {
					if c.Forges != nil && !slices.Contains(c.Forges, forge) {
						continue
					}
					mu.Lock()
					repos++
					for _, st := range c.Steps {
						if !st.Setup {
							steps++
						}
					}
					mu.Unlock()
					t.Run(c.Name, func(t *testing.T) {
						t.Parallel()
						for _, r := range runDiffCase(t, d, p, c) {
							mu.Lock()
							results = append(results, r)
							mu.Unlock()
						}
					})
				}
			})
		}
	})
	counted, identical, deliberate, unexplained := 0, 0, 0, 0
	for _, r := range results {
		if r.Setup {
			// Compared (a difference there is reported above and fails the
			// test), not counted: both tenants ran Renovate from one start.
			if len(r.Unexplained) > 0 {
				unexplained++
			}
			continue
		}
		counted++
		switch {
		case len(r.Unexplained) > 0:
			unexplained++
		case len(r.Deliberate) > 0:
			deliberate++
		default:
			identical++
		}
	}
	line := fmt.Sprintf("nudge-diff repos=%d cases=%d identical=%d deliberate=%d unexplained=%d",
		repos, counted, identical, deliberate, unexplained)
	// One line, at the start of its own line in the verbose log: make test shows it.
	fmt.Println(line)
	require.Equal(t, steps, counted, "every step of every case was compared (a case that stopped early is reported above)")
	require.GreaterOrEqual(t, counted, 10)
	require.Zero(t, unexplained, "unexplained differences (listed above)")
	for _, dd := range deliberateDifferences {
		require.True(t, seenDeliberate[dd.Name], "the deliberate difference %s is in no case any more: remove it from deliberateDifferences and docs/nudging.md", dd.Name)
	}
}

// ---- the cases ----

// diffCase is one repository: its files (with {built}, {old}, {released}
// standing for the case's image repository, the digest the files refer to, and
// the released name), the nudged component's own ConfigMap tier when set, and
// the builds written into it one after another.
type diffCase struct {
	Name      string
	Files     map[string]string
	ConfigMap map[string]string
	Steps     []diffStep
	// Current makes the files already refer to the first build's digest.
	Current bool
	// Forges are the forges the case runs on (nil: every one of diffForges).
	Forges []string
}

// diffForges are the forges the direct writer writes on itself, each with its
// two tenants: the real Gitea and the GitHub emulator. (On GitLab the writer
// leaves the nudge to Renovate: nothing of its own to compare.)
var diffForges = []string{"forgejo", "github"}

// startDiffForge starts forge for t.
func startDiffForge(t *testing.T, forge string) diffForge {
	switch forge {
	case "forgejo":
		return giteaForge{landingforge.StartForgejo(t)}
	case "github":
		return githubForge{landingforge.StartGitHub(t)}
	}
	t.Fatalf("no forge %q for the differential test", forge)
	return nil
}

// diffStep is one build: a new image pushed under the case's tag (or, Late, the
// build of step LateOf again, after newer builds: its tag moved on).
type diffStep struct {
	Name       string
	NudgeFiles string
	// Late repeats the build of an earlier step (LateOf, its index) after the
	// newer ones: an older build's nudge that comes late.
	Late   bool
	LateOf int
	// Want is the outcome the direct writer must report (Opened when empty).
	Want string
	// RenovateOnBoth: Renovate writes this step in both tenants, continuing
	// whatever the previous step left (the direct writer's branch, in one).
	RenovateOnBoth bool
	// Setup: a step that only prepares the next (Renovate on both, from the
	// same start); compared like every step, not counted as a case.
	Setup bool
	// Before is what a person does in both tenants before the step's build:
	// "" nothing, personCommits (a commit of theirs on the nudge branch) or
	// personCloses (the open nudge pull request closed, unmerged).
	Before string
}

// What a person does before a step (diffStep.Before).
const (
	personCommits = "person-commits"
	personCloses  = "person-closes"
)

func diffCases() []diffCase {
	cases := allDiffCases()
	for i := range cases {
		if cases[i].Forges == nil && !alsoOnGitHub[cases[i].Name] {
			cases[i].Forges = []string{"forgejo"}
		}
	}
	return cases
}

// alsoOnGitHub are the cases that run on the GitHub emulator too: what is
// forge-specific (the branch, the commit's identity, the pull request and its
// labels, an update, a hand-over, nothing opened). The file rewriting is the
// same code on every forge: its cases run on Gitea only, which keeps the test
// to its time (each Renovate run costs seconds of a core).
var alsoOnGitHub = map[string]bool{"tekton": true, "distribution": true, "tenant-config": true,
	"second-build": true, "renovate-continues-direct": true, "direct-continues-renovate": true, "already-current": true}

func allDiffCases() []diffCase {
	one := []diffStep{{Name: "build"}}
	// Gitea only: a person's commit and closing are set up through Gitea's API
	// here; and on the GitHub emulator (which allows no auto-merge) Renovate
	// with automerge aborts its run after opening the pull request
	// ("Repository has changed during renovation"), which the run reads as
	// RepositoryNotUpdated: no oracle there.
	onGitea := []string{"forgejo"}
	return []diffCase{
		{Name: "dockerfile", Steps: one, Files: map[string]string{
			"Dockerfile": "FROM {built}@{old}\nRUN true\n"}},
		{Name: "containerfile", Steps: one, Files: map[string]string{
			"Containerfile": "FROM {built}:v1@{old} AS build\nCOPY . /src\nFROM registry.example.com/base/ubi:9@{old}\n"}},
		{Name: "tekton", Steps: one, Files: map[string]string{
			".tekton/consumer-push.yaml": "apiVersion: tekton.dev/v1\nkind: PipelineRun\nmetadata:\n  name: consumer-on-push\nspec:\n  pipelineSpec:\n    tasks:\n" +
				"      - name: check\n        taskSpec:\n          steps:\n            - name: run\n              image: {built}:v1@{old}\n" +
				"      - name: other\n        taskSpec:\n          steps:\n            - name: run\n              image: '{built}@{old}'\n",
			".tekton/consumer-pull-request.yaml": "apiVersion: tekton.dev/v1\nkind: PipelineRun\nspec:\n  params:\n    - name: operand-image\n      value: \"{built}@{old}\"\n"}},
		{Name: "olm-csv", Steps: one, Files: map[string]string{
			"bundle/manifests/consumer.clusterserviceversion.yaml": "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\n" +
				"metadata:\n  name: consumer.v0.1.0\n  annotations:\n    containerImage: {built}@{old}\n" +
				"spec:\n  install:\n    strategy: deployment\n    spec:\n      deployments:\n        - name: consumer-controller\n          spec:\n            template:\n              spec:\n" +
				"                containers:\n                  - name: manager\n                    image: {built}:v1@{old}\n                    env:\n" +
				"                      - name: RELATED_IMAGE_OPERAND\n                        value: {released}@{old}\n" +
				"  relatedImages:\n    - name: operand\n      image: {built}@{old}\n    - name: operand-released\n      image: {released}:v1@{old}\n",
			"bundle/metadata/annotations.yaml": "annotations:\n  operators.operatorframework.io.bundle.package.v1: consumer\n"}},
		{Name: "kustomization", Steps: one, Files: map[string]string{
			// kustomize's images transformer: the digest on a line of its own,
			// and a resource that names the image whole.
			"config/kustomization.yaml": "resources:\n  - manager.yaml\nimages:\n  - name: controller\n    newName: {built}\n    digest: {old}\n" +
				"  - name: operand\n    newName: {built}\n    newTag: v1\n",
			"config/manager.yaml": "apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n        - name: operand\n          image: {built}:v1@{old}\n"}},
		{Name: "distribution", Steps: one, Files: map[string]string{
			// Only the released name: the ReleasePlanAdmission's repository aliases the built one.
			"Dockerfile":      "FROM {released}:v1@{old}\n",
			"deploy/app.yaml": "image: {released}@{old}\nsidecar: {built}@{old}\n"}},
		{Name: "forms", Steps: one, Files: map[string]string{
			"deploy/forms.yaml": "tagged: {built}:v1@{old}\nbare: {built}@{old}\nother-tag: {built}:v2@{old}\n" +
				"other-image: {built}-other@{old}\nquoted: \"{built}:v1@{old}\"\ntwo: {built}@{old} {built}:v1@{old}\n"}},
		{Name: "one-line-two-images", Steps: one, Files: map[string]string{
			// Two references on one line, the nudged image's first: the regex
			// Renovate is given, <repo>(:.*)?@(sha256:…), is greedy.
			"deploy/pair.yaml": "images: {built}:v1@{old} registry.example.com/other/sidecar:v2@{old}\n"}},
		{Name: "excluded", Steps: one, Files: map[string]string{
			// The default patterns (.*Dockerfile.*, .*.yaml, .*Containerfile.*) leave these out.
			"Dockerfile":     "FROM {built}@{old}\n",
			"README.md":      "Built from {built}@{old}\n",
			"docs/notes.txt": "{built}:v1@{old}\n",
			"deploy/app.yml": "image: {built}@{old}\n"}},
		{Name: "tenant-config", Steps: one, ConfigMap: map[string]string{"fileMatch": "deploy/.*", "labels": diffExtraLabel},
			Files: map[string]string{
				"Dockerfile":      "FROM {built}@{old}\n",
				"deploy/app.yaml": "image: {built}@{old}\n",
				"deploy/app.txt":  "{built}@{old}\n"}},
		{Name: "nudge-files", Steps: []diffStep{{Name: "build", NudgeFiles: "manifests/.*, .*Containerfile"}}, Files: map[string]string{
			"Dockerfile":         "FROM {built}@{old}\n",
			"Containerfile":      "FROM {built}@{old}\n",
			"manifests/app.json": "{\"image\": \"{built}@{old}\"}\n"}},
		{Name: "platform-automerge", Steps: one, Forges: onGitea, ConfigMap: map[string]string{"automerge": "true"}, Files: map[string]string{
			// automerge with the forge's own auto-merge (platformAutomerge, true
			// unless the ConfigMap says otherwise).
			"Dockerfile": "FROM {built}@{old}\n"}},
		// A person's commit on the nudge branch: neither writer writes over it.
		{Name: "person-committed", Forges: onGitea, Steps: []diffStep{{Name: "first"},
			{Name: "second", Before: personCommits, Want: nudgewriteapi.OutcomePersonCommitted},
			{Name: "third", Want: nudgewriteapi.OutcomePersonCommitted}},
			Files: map[string]string{"Dockerfile": "FROM {built}@{old}\n"}},
		// The nudge pull request closed unmerged: recreateWhen "always"
		// (build-service's), so the next build opens it again.
		{Name: "closed-pr", Forges: onGitea, Steps: []diffStep{{Name: "first"}, {Name: "second", Before: personCloses}},
			Files: map[string]string{"Dockerfile": "FROM {built}@{old}\n"}},
		// Either writer continues the other's branch: Renovate takes the
		// direct writer's pull request as its own and updates it, and the direct
		// writer updates Renovate's.
		{Name: "renovate-continues-direct", Steps: []diffStep{{Name: "first"}, {Name: "second", RenovateOnBoth: true}},
			Files: map[string]string{"Dockerfile": "FROM {built}@{old}\n", ".tekton/build.yaml": "image: {built}:v1@{old}\n"}},
		{Name: "direct-continues-renovate", Steps: []diffStep{{Name: "first", RenovateOnBoth: true, Setup: true}, {Name: "second", Want: nudgewriteapi.OutcomeUpdated}},
			Files: map[string]string{"Dockerfile": "FROM {built}@{old}\n", ".tekton/build.yaml": "image: {built}:v1@{old}\n"}},
		{Name: "already-current", Steps: []diffStep{{Name: "build", Want: nudgewriteapi.OutcomeAlreadyCurrent}}, Current: true, Files: map[string]string{
			"Dockerfile": "FROM {built}@{old}\n"}},
		{Name: "second-build", Steps: []diffStep{{Name: "first"}, {Name: "second", Want: nudgewriteapi.OutcomeUpdated},
			{Name: "first-again-late", Late: true, LateOf: 0, Want: nudgewriteapi.OutcomeSuperseded}},
			Files: map[string]string{
				"Dockerfile":         "FROM {built}@{old}\n",
				".tekton/build.yaml": "image: {built}:v1@{old}\n"}},
	}
}

// stepResult is one compared step.
type stepResult struct {
	Case, Step  string
	Setup       bool
	Deliberate  []string // names of the deliberate differences seen
	Unexplained []difference
}

// difference is one field that differs after normalisation.
type difference struct {
	Field               string
	Renovate, Direct    string
	renovateHas, dirHas bool
}

// runDiffCase sets the case up, runs its steps on both sides, and compares
// after each. A failure to write or read is fatal for the case (the step count
// then shows it); a difference is recorded and the next step runs.
func runDiffCase(t *testing.T, d *diffWorld, p *forgePair, c diffCase) []stepResult {
	ctx := context.Background()
	repoPath := "diff/" + p.forge.Name() + "/" + c.Name
	built := d.w.registry.Host + "/" + repoPath
	image := built + ":v1"
	// The digest the files refer to: an image pushed before the builds.
	old, err := d.w.registry.PushImage(ctx, repoPath+":v1")
	require.NoError(t, err)
	files := map[string]string{}
	for p, content := range c.Files {
		files[p] = strings.NewReplacer("{built}", built, "{old}", old, "{released}", diffReleased).Replace(content)
	}
	d.setUp(t, p, repoSpec{Name: c.Name, Files: files, ConfigMap: c.ConfigMap})

	var out []stepResult
	var digests []string
	var prev map[string]repoShot
	start := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	for i, st := range c.Steps {
		n := diffNudge{ID: fmt.Sprintf("%d-%s", i+1, st.Name), Nudged: c.Name, Image: image, NudgeFiles: st.NudgeFiles}
		switch {
		case st.Late:
			n.Digest, n.BuiltAt = digests[st.LateOf], start.Add(time.Duration(st.LateOf)*time.Minute)
		case c.Current && i == 0:
			n.Digest, n.BuiltAt = old, start
		default:
			n.Digest, err = d.w.registry.PushImage(ctx, repoPath+":v1")
			require.NoError(t, err)
			n.BuiltAt = start.Add(time.Duration(i) * time.Minute)
		}
		digests = append(digests, n.Digest)
		shots := map[string]repoShot{}
		for _, s := range p.sides {
			p.forge.person(t, s.ns, c.Name, st.Before)
		}
		for _, s := range p.sides {
			write, writer := s.write, s.name
			if st.RenovateOnBoth {
				write, writer = writeRenovate, sideRenovate
			}
			w, err := write(ctx, t, d, s, n)
			require.NoError(t, err, "%s writer in tenant %s, case %s step %s", writer, s.ns, c.Name, st.Name)
			shot, err := read(p.forge, s.ns, c.Name)
			require.NoError(t, err, "read %s/%s", s.ns, c.Name)
			if writer == sideDirect {
				checkReport(t, c.Name+" step "+st.Name, st.Want, w, shot, files)
			}
			normalise(&shot, s.ns, prev[s.name])
			shots[s.name] = shot
			t.Logf("case %s step %s: tenant %s, %s writer: outcome=%q %s", c.Name, st.Name, s.ns, writer, w.Outcome, w.Detail)
		}
		for _, s := range p.sides {
			recordShape(p.forge.Name()+"/"+c.Name+"/"+st.Name+"/"+s.name, shots[s.name])
		}
		r := stepResult{Case: p.forge.Name() + "/" + c.Name, Step: st.Name, Setup: st.Setup}
		for _, diff := range compareShots(shots[sideRenovate], shots[sideDirect]) {
			if name := deliberateFor(diffContext{Case: c, Built: built, Old: old, New: n.Digest, Seeded: files}, diff); name != "" {
				r.Deliberate = append(r.Deliberate, name)
				t.Logf("case %s step %s: deliberate difference %s in %s", c.Name, st.Name, name, diff.Field)
				continue
			}
			r.Unexplained = append(r.Unexplained, diff)
			t.Errorf("case %s step %s: %s differs (unexplained):\n%s", c.Name, st.Name, diff.Field, diff.show())
		}
		out = append(out, r)
		prev = shots
	}
	return out
}

// checkReport: what the direct writer says it did (the result the Nudge's
// status and Events show) is what the forge shows: the outcome the step
// expects, the pull request and branch it names, and the files its commit
// changed (those whose content differs from main's).
func checkReport(t *testing.T, step, want string, w written, shot repoShot, seeded map[string]string) {
	t.Helper()
	if want == "" {
		want = nudgewriteapi.OutcomeOpened
	}
	if w.Outcome != want {
		t.Errorf("%s: the direct writer reported %q, want %q (%s)", step, w.Outcome, want, w.Detail)
	}
	if len(shot.PRs) == 0 {
		if w.PR != 0 || len(w.Files) != 0 {
			t.Errorf("%s: the direct writer reported PR #%d and files %v, the forge has no pull request", step, w.PR, w.Files)
		}
		return
	}
	pr := shot.PRs[len(shot.PRs)-1]
	if w.PR != pr.Number || w.Branch != pr.Branch {
		t.Errorf("%s: the direct writer reported PR #%d on %q, the forge has #%d on %q", step, w.PR, w.Branch, pr.Number, pr.Branch)
	}
	if want != nudgewriteapi.OutcomeOpened && want != nudgewriteapi.OutcomeUpdated {
		return // nothing committed: no files
	}
	var changed []string
	for path, content := range pr.Tree {
		if seeded[path] != content {
			changed = append(changed, path)
		}
	}
	sort.Strings(changed)
	got := append([]string(nil), w.Files...)
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(changed, ",") {
		t.Errorf("%s: the direct writer reported files %v, its commit changed %v", step, got, changed)
	}
}

// tenantToken and runToken stand for what must differ between the sides.
const (
	tenantToken = "<tenant>"
	runToken    = "<run>"
)

var runTrailer = regexp.MustCompile(`(?m)^(` + renovate.TrailerRun + `): .*$`)

// normalise replaces what must differ: the tenant (the organisation's name)
// wherever it appears, and the Nudgeflow-Run trailer's value; and records
// whether each pull request is the one the previous step read.
func normalise(shot *repoShot, tenant string, prev repoShot) {
	n := func(s string) string { return strings.ReplaceAll(s, tenant, tenantToken) }
	for i := range shot.PRs {
		p := &shot.PRs[i]
		p.Title, p.Body, p.Branch = n(p.Title), n(p.Body), n(p.Branch)
		for j := range p.Commits {
			c := &p.Commits[j]
			c.Subject, c.Body = n(c.Subject), runTrailer.ReplaceAllString(n(c.Body), "$1: "+runToken)
		}
		for path, content := range p.Tree {
			p.Tree[path] = n(content)
		}
		for _, q := range prev.PRs {
			if q.Number == p.Number {
				p.SameAsPrevious = true
			}
		}
	}
	for i := range shot.Branches {
		shot.Branches[i] = n(shot.Branches[i])
	}
}

// compareShots lists every difference between Renovate's repository and the
// direct writer's.
func compareShots(r, dw repoShot) []difference {
	var out []difference
	add := func(field, a, b string) {
		if a != b {
			out = append(out, difference{Field: field, Renovate: a, Direct: b, renovateHas: true, dirHas: true})
		}
	}
	add("branches", strings.Join(r.Branches, "\n"), strings.Join(dw.Branches, "\n"))
	add("pull requests (count)", fmt.Sprint(len(r.PRs)), fmt.Sprint(len(dw.PRs)))
	for i := 0; i < len(r.PRs) && i < len(dw.PRs); i++ {
		a, b := r.PRs[i], dw.PRs[i]
		pr := fmt.Sprintf("pr[%d].", i)
		add(pr+"state", a.State, b.State)
		add(pr+"branch", a.Branch, b.Branch)
		add(pr+"base", a.Base, b.Base)
		add(pr+"title", a.Title, b.Title)
		add(pr+"labels", strings.Join(a.Labels, ","), strings.Join(b.Labels, ","))
		add(pr+"draft", fmt.Sprint(a.Draft), fmt.Sprint(b.Draft))
		add(pr+"merged", fmt.Sprint(a.Merged), fmt.Sprint(b.Merged))
		add(pr+"timeline", strings.Join(a.Timeline, "\n"), strings.Join(b.Timeline, "\n"))
		add(pr+"same PR as the previous step", fmt.Sprint(a.SameAsPrevious), fmt.Sprint(b.SameAsPrevious))
		ah, am, af := splitBody(a.Body)
		bh, bm, bf := splitBody(b.Body)
		add(pr+"body.header", ah, bh)
		add(pr+"body.footer", af, bf)
		add(pr+"body.middle", am, bm)
		add(pr+"body.renovate-debug", debugData(a.Body), debugData(b.Body))
		add(pr+"commits above main (count)", fmt.Sprint(len(a.Commits)), fmt.Sprint(len(b.Commits)))
		for j := 0; j < len(a.Commits) && j < len(b.Commits); j++ {
			ca, cb := a.Commits[j], b.Commits[j]
			c := fmt.Sprintf("%scommit[%d].", pr, j)
			add(c+"author", ca.AuthorName+" <"+ca.AuthorEmail+">", cb.AuthorName+" <"+cb.AuthorEmail+">")
			add(c+"committer", ca.CommitterName+" <"+ca.CommitterEmail+">", cb.CommitterName+" <"+cb.CommitterEmail+">")
			add(c+"subject", ca.Subject, cb.Subject)
			add(c+"body", ca.Body, cb.Body)
		}
		paths := map[string]bool{}
		for p := range a.Tree {
			paths[p] = true
		}
		for p := range b.Tree {
			paths[p] = true
		}
		for _, p := range sortedKeys(paths) {
			ac, aok := a.Tree[p]
			bc, bok := b.Tree[p]
			if aok != bok || ac != bc {
				out = append(out, difference{Field: pr + "tree:" + p, Renovate: ac, Direct: bc, renovateHas: aok, dirHas: bok})
			}
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// splitBody cuts a PR body into its header (the first paragraph: the config's
// prHeader), its footer (from the config's prFooter's first line to the end,
// without Renovate's trailing hidden comments) and what is between.
func splitBody(body string) (header, middle, footer string) {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	header, rest, _ := strings.Cut(body, "\n\n")
	if i := strings.Index(rest, footerStart); i >= 0 {
		middle, footer = rest[:i], rest[i:]
	} else {
		middle = rest
	}
	footer = strings.TrimSpace(hiddenComment.ReplaceAllString(footer, ""))
	return header, middle, footer
}

// footerStart is the first line of the prFooter nudgeflow's config gives Renovate.
const footerStart = "To execute skipped test pipelines"

var (
	hiddenComment = regexp.MustCompile(`(?s)<!--.*?-->`)
	renovateDebug = regexp.MustCompile(`<!--renovate-debug:([A-Za-z0-9+/=]+)-->`)
)

// debugData is the hidden comment Renovate ends its body with and reads back on
// its next run (the labels it set, the target branch), decoded, without the
// versions of Renovate that wrote it: "" when there is none.
func debugData(body string) string {
	m := renovateDebug.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(m[1])
	if err != nil {
		return "undecodable: " + m[1]
	}
	var data map[string]any
	if err := json.Unmarshal(raw, &data); err != nil {
		return "undecodable: " + string(raw)
	}
	delete(data, "createdInVer")
	delete(data, "updatedInVer")
	out, _ := json.Marshal(data)
	return string(out)
}

// show prints a difference: both values, and for multi-line values the lines
// only one side has.
func (d difference) show() string {
	var b strings.Builder
	val := func(has bool, s string) string {
		if !has {
			return "(absent)"
		}
		return fmt.Sprintf("%q", s)
	}
	if !strings.Contains(d.Renovate, "\n") && !strings.Contains(d.Direct, "\n") || !d.renovateHas || !d.dirHas {
		fmt.Fprintf(&b, "  renovate (expected): %s\n  direct   (got):      %s\n", val(d.renovateHas, d.Renovate), val(d.dirHas, d.Direct))
	}
	if d.renovateHas && d.dirHas && (strings.Contains(d.Renovate, "\n") || strings.Contains(d.Direct, "\n")) {
		b.WriteString("  line by line, - Renovate's (expected), + the direct writer's (got):\n")
		b.WriteString(lineDiff(d.Renovate, d.Direct))
	}
	return b.String()
}

// lineDiff shows two texts' lines in order, each marked " " (both), "-" (only
// a) or "+" (only b), by their longest common subsequence; long stretches of
// common lines are cut to the ones beside a change.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	// lcs[i][j]: the longest common subsequence of al[i:] and bl[j:].
	lcs := make([][]int, len(al)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(bl)+1)
	}
	for i := len(al) - 1; i >= 0; i-- {
		for j := len(bl) - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		mark byte
		text string
	}
	var lines []line
	i, j := 0, 0
	for i < len(al) || j < len(bl) {
		switch {
		case i < len(al) && j < len(bl) && al[i] == bl[j]:
			lines = append(lines, line{' ', al[i]})
			i, j = i+1, j+1
		case j < len(bl) && (i == len(al) || lcs[i][j+1] >= lcs[i+1][j]):
			lines = append(lines, line{'+', bl[j]})
			j++
		default:
			lines = append(lines, line{'-', al[i]})
			i++
		}
	}
	near := func(k int) bool {
		for d := -2; d <= 2; d++ {
			if k+d >= 0 && k+d < len(lines) && lines[k+d].mark != ' ' {
				return true
			}
		}
		return false
	}
	var out strings.Builder
	cut := false
	for k, l := range lines {
		if !near(k) {
			if !cut {
				out.WriteString("    …\n")
			}
			cut = true
			continue
		}
		cut = false
		fmt.Fprintf(&out, "  %c %s\n", l.mark, l.text)
	}
	return out.String()
}

// ---- deliberate differences ----

// deliberateDifference is a difference the direct writer makes on purpose. The
// same names, with the same reasons, are listed in docs/nudging.md under
// "Direct writer vs Renovate: deliberate differences"
// (TestNudgeDiffDeliberateDifferencesDocumented). Each rule is narrow: it
// accepts the difference only in the shape the reason explains.
type deliberateDifference struct {
	Name, Reason string
	// Matches says whether a difference seen in a step is this one.
	Matches func(x diffContext, d difference) bool
}

// diffContext is what a rule may look at besides the difference: the case, its
// image repository, the digest main's files hold, the build's, and the files
// the repository was seeded with.
type diffContext struct {
	Case            diffCase
	Built, Old, New string
	Seeded          map[string]string
}

var deliberateDifferences = []deliberateDifference{
	{
		Name: "no-edited-notification",
		Reason: "when a person has committed on the nudge branch, Renovate also comments \"Edited/Blocked Notification\" on the pull request; " +
			"the direct writer leaves the pull request alone and says so in the Nudge's status and Event (PersonCommitted)",
		Matches: func(x diffContext, d difference) bool {
			if !strings.HasSuffix(d.Field, ".timeline") || !d.renovateHas || !d.dirHas {
				return false
			}
			// Renovate's events are the direct writer's and that one comment.
			rest, found := removeLine(d.Renovate, editedNotification)
			return found && rest == d.Direct
		},
	},
	{
		Name: "greedy-same-line",
		Reason: "on a line naming the nudged image and then another image, Renovate's pattern <repo>(:.*)?@sha256:… runs on to the other image's digest and rewrites it too; " +
			"the direct writer rewrites only the nudged image's references",
		Matches: func(x diffContext, d difference) bool {
			path, ok := strings.CutPrefix(d.Field[strings.Index(d.Field, ".")+1:], "tree:")
			seeded, was := x.Seeded[path]
			if !ok || !was || !d.renovateHas || !d.dirHas {
				return false
			}
			// The direct writer's file is main's with the nudged image's references,
			// and only those, at the new digest; Renovate's differs from it only
			// on lines that name another image after the nudged one.
			if d.Direct != nudgedRefs(x.Built).ReplaceAllString(seeded, x.Built+"${1}@"+x.New) {
				return false
			}
			rl, dl := strings.Split(d.Renovate, "\n"), strings.Split(d.Direct, "\n")
			if len(rl) != len(dl) {
				return false
			}
			for i := range rl {
				if rl[i] != dl[i] && len(digestRef.FindAllString(dl[i], -1)) < 2 {
					return false
				}
			}
			return true
		},
	},
}

// editedNotification is the comment Renovate posts, as the bot, on a pull
// request whose branch a person committed on (its ensureComment topic
// "Edited/Blocked Notification"), as Gitea's timeline lists it.
const editedNotification = "comment by " + localenvForgejoBot + ": ### Edited/Blocked Notification\n\n" +
	"Renovate will not automatically rebase this PR, because it does not recognize the last commit author and assumes somebody else may have edited the PR.\n\n" +
	"You can manually request rebase by checking the rebase/retry box above.\n\n ⚠️ **Warning**: custom changes will be lost."

// removeLine removes one entry (which may span lines) from a timeline joined
// by newlines.
func removeLine(timeline, entry string) (string, bool) {
	if timeline == entry {
		return "", true
	}
	for _, form := range []string{entry + "\n", "\n" + entry} {
		if i := strings.Index(timeline, form); i >= 0 {
			return timeline[:i] + timeline[i+len(form):], true
		}
	}
	return timeline, false
}

// digestRef is a reference's digest.
var digestRef = regexp.MustCompile(`@sha256:[a-f0-9]{64}`)

// nudgedRefs matches a reference of the nudged repository, exactly that one
// (another repository sharing its prefix is not it), up to its digest.
func nudgedRefs(built string) *regexp.Regexp {
	return regexp.MustCompile(regexp.QuoteMeta(built) + `((?::[\w][\w.-]*)?)@sha256:[a-f0-9]{64}`)
}

// deliberateFor names the deliberate difference d is, or "", and remembers
// which were seen: a listed difference that no case shows any more is stale.
func deliberateFor(x diffContext, d difference) string {
	for _, dd := range deliberateDifferences {
		if dd.Matches(x, d) {
			seenMu.Lock()
			seenDeliberate[dd.Name] = true
			seenMu.Unlock()
			return dd.Name
		}
	}
	return ""
}

var (
	seenMu         sync.Mutex
	seenDeliberate = map[string]bool{}
)

// ---- the shape Renovate gives, for the writer's authors ----

var (
	shapeMu   sync.Mutex
	shapeDump = map[string]repoShot{}
)

// recordShape keeps what a writer made of a step (key case/step/side); with
// NUDGE_DIFF_SHAPES set (a file), every step rewrites that file with all it
// kept, as JSON, for the direct writer's authors to read.
func recordShape(key string, shot repoShot) {
	if os.Getenv("NUDGE_DIFF_SHAPES") == "" {
		return
	}
	shapeMu.Lock()
	defer shapeMu.Unlock()
	shapeDump[key] = shot
	b, err := json.MarshalIndent(shapeDump, "", "  ")
	if err == nil {
		_ = os.WriteFile(os.Getenv("NUDGE_DIFF_SHAPES"), b, 0o644)
	}
}
