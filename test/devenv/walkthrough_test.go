package devenv_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"k8s.io/client-go/tools/clientcmd"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/test/devenv"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
)

const bundleRepo = devenv.DemoNamespace + "/" + devenv.Bundle

// env is what the checks read the running system with.
type env struct {
	t        *testing.T
	home     string
	p        ports
	kube     ctrlclient.Client
	temporal client.Client
	forge    forgeAPI
	browser  string
}

func (e *env) connect() {
	e.t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(e.home, "kubeconfig"))
	if err != nil {
		e.t.Fatal(err)
	}
	if e.kube, err = ctrlclient.New(cfg, ctrlclient.Options{Scheme: kube.NewScheme()}); err != nil {
		e.t.Fatal(err)
	}
	tc, err := (&localenv.Temporal{Address: fmt.Sprintf("127.0.0.1:%d", e.p.temporal), Namespace: localenv.DefaultNamespace}).Dial()
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(tc.Close)
	e.temporal = tc
	b, err := os.ReadFile(filepath.Join(e.home, "forge-tokens.json"))
	if err != nil {
		e.t.Fatal(err)
	}
	token := regexp.MustCompile(`"maintainer":"([^"]+)"`).FindStringSubmatch(string(b))
	if token == nil {
		e.t.Fatalf("no maintainer token in forge-tokens.json")
	}
	e.forge = forgeAPI{base: fmt.Sprintf("http://127.0.0.1:%d", e.p.forge), token: token[1]}
}

func (e *env) group(name string) *appstudiov1alpha1.ChangeGroup {
	e.t.Helper()
	var cg appstudiov1alpha1.ChangeGroup
	if err := e.kube.Get(context.Background(), ctrlclient.ObjectKey{Namespace: devenv.DemoNamespace, Name: name}, &cg); err != nil {
		e.t.Fatal(err)
	}
	return &cg
}

// page waits until the emulator's page at path contains every want.
func (e *env) page(path string, want ...string) string {
	e.t.Helper()
	return e.pageAt(e.forge.base+path, want...)
}

// pageAt waits until the page at url contains every want.
func (e *env) pageAt(url string, want ...string) string {
	e.t.Helper()
	var body string
	world.Eventually(e.t, 30*time.Second, "emulator page "+url+" shows "+strings.Join(want, ", "), func() (bool, error) {
		var err error
		if body, err = httpGet(url); err != nil {
			return false, err
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				return false, fmt.Errorf("no %q in %s", w, body)
			}
		}
		return true, nil
	})
	return body
}

type pull struct {
	Number int
	Title  string
	Draft  bool
	State  string
	Merged bool
	Head   struct{ SHA, Ref string }
}

// builds counts component's simulated builds (the latest is the n-th).
func (e *env) builds(component string) int {
	e.t.Helper()
	var builds tektonv1.PipelineRunList
	if err := e.kube.List(context.Background(), &builds, ctrlclient.InNamespace(devenv.DemoNamespace),
		ctrlclient.MatchingLabels{konflux.LabelComponent: component, konflux.LabelPipelineType: "build"}); err != nil {
		e.t.Fatal(err)
	}
	return len(builds.Items)
}

// isNudge reports whether Renovate opened p (a nudge PR, not a group's).
func (p pull) isNudge() bool { return strings.HasPrefix(p.Head.Ref, renovate.BranchPrefix) }

// groupPulls are the bundle's PRs that groups opened, newest first.
func (e *env) groupPulls() []pull {
	e.t.Helper()
	var out []pull
	for _, p := range e.pulls() {
		if !p.isNudge() {
			out = append(out, p)
		}
	}
	return out
}

// nudgePR waits for the nudge PR Renovate opens on the bundle for component's
// latest build: its CSV carries that build's digest.
func (e *env) nudgePR(component string) pull {
	e.t.Helper()
	want := devenv.ReferenceOf(e.p.registryHost(), component) + "@" + devenv.DigestOf(devenv.DemoNamespace, component, e.builds(component))
	var found pull
	world.Eventually(e.t, 2*time.Minute, "Renovate's nudge PR with "+want, func() (bool, error) {
		for _, p := range e.pulls() {
			if !p.isNudge() || p.State != "open" {
				continue
			}
			if csv, err := e.forge.fileAt(bundleRepo, p.Head.SHA, devenv.CSVPath); err == nil && strings.Contains(csv, want) {
				found = p
				return true, nil
			}
		}
		return false, fmt.Errorf("no open nudge PR has it yet; Renovate's logs: %s", filepath.Join(e.home, "logs", "renovate", "runs", devenv.DemoNamespace))
	})
	return found
}

func (e *env) pulls() []pull {
	e.t.Helper()
	var prs []pull
	if err := e.forge.get("repos/"+bundleRepo+"/pulls?state=all", &prs); err != nil {
		e.t.Fatal(err)
	}
	return prs
}

// prGroupPR waits for the bundle PR of PR group my-feature to satisfy cond.
func (e *env) prGroupPR(cond func(pull) bool) pull {
	e.t.Helper()
	var found pull
	world.Eventually(e.t, 60*time.Second, "the bundle PR of PR group my-feature", func() (bool, error) {
		var prs []pull
		if err := e.forge.get("repos/"+bundleRepo+"/pulls?state=all&head="+url.QueryEscape(devenv.DemoNamespace+":my-feature@nudgeflow-"+devenv.Bundle), &prs); err != nil {
			return false, err
		}
		if len(prs) == 0 {
			return false, fmt.Errorf("no PR on my-feature@nudgeflow-%s", devenv.Bundle)
		}
		found = prs[0]
		if cond(found) {
			return true, nil
		}
		return false, fmt.Errorf("PR #%d: %+v", found.Number, found)
	})
	return found
}

func (e *env) workflowStatus(id string) enumspb.WorkflowExecutionStatus {
	e.t.Helper()
	d, err := e.temporal.DescribeWorkflowExecution(context.Background(), id, "")
	if err != nil {
		e.t.Fatal(err)
	}
	return d.WorkflowExecutionInfo.Status
}

func contains(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("output lacks %q:\n%s", w, out)
		}
	}
}

// TestWalkthrough runs README.md's walkthrough as written against `nudgeflow-dev dev`,
// checks every outcome it promises, then stops it with SIGINT and resumes it.
func TestWalkthrough(t *testing.T) {
	dir, home, childEnv, p := setUp(t)
	e := &env{t: t, home: home, p: p, browser: chromium(t)}

	d, took := startDev(t, dir, childEnv, e.p)
	t.Logf("first start, tools cached: ready after %s", took)
	contains(t, d.out.String(), fmt.Sprintf("http://127.0.0.1:%d/namespaces/nudgeflow/workflows", e.p.ui),
		fmt.Sprintf("http://127.0.0.1:%d", e.p.forge), filepath.Join(home, "kubeconfig"), `eval "$(./bin/nudgeflow-dev dev env)"`)
	e.connect()

	var sh *shell // the walkthrough's shell, started below; a check may run a listing again
	checks := map[string]func(out string){
		"env": func(out string) {
			contains(t, out, "component.appstudio.redhat.com/operator-bundle", "component.appstudio.redhat.com/operator ",
				"component.appstudio.redhat.com/operand-a", "component.appstudio.redhat.com/operand-b", "component.appstudio.redhat.com/operand-c",
				"nudgeconfig.konflux-ci.dev/nudge-config", "AllComponentsExist", "componentgroup.appstudio.redhat.com/operator-tests")
		},
		"create-group": func(out string) {
			cg := e.group("bundle-update")
			if len(cg.Spec.NudgingComponents) != 4 || cg.Status.Ready != "0/4" {
				t.Fatalf("bundle-update: %d components, ready %q; want 4 filled from the NudgeConfig, 0/4", len(cg.Spec.NudgingComponents), cg.Status.Ready)
			}
			contains(t, out, "bundle-update")
		},
		"build-three": func(out string) {
			cg := e.group("bundle-update")
			prURL := fmt.Sprintf("%s/%s/pull/1", e.forge.base, bundleRepo)
			if cg.Status.PullRequestURL != prURL {
				t.Fatalf("pullRequestURL %q, want %q", cg.Status.PullRequestURL, prURL)
			}
			contains(t, out, prURL)
			body := e.page("/"+bundleRepo+"/pull/1", `id="pr-state">draft<`, `id="ci-count">0<`, "[skip ci]", "Waiting", "<th>Image</th>")
			if n := strings.Count(body, "Ready</td>"); n != 3 {
				t.Fatalf("the status table shows %d Ready components, want 3:\n%s", n, body)
			}
			if prs := e.pulls(); len(prs) != 1 || !prs[0].Draft {
				t.Fatalf("want one draft PR, got %+v", prs)
			}
			// The browser sees the same PR page.
			world.Eventually(t, 3*time.Minute, "chromium shows the draft PR", func() (bool, error) {
				dom, err := dumpDOM(t, e.browser, prURL)
				if err != nil {
					return false, err
				}
				if strings.Contains(dom, "ChangeGroup bundle-update") && strings.Contains(dom, `id="pr-state">draft<`) {
					return true, nil
				}
				return false, fmt.Errorf("PR page DOM: %.2000s", dom)
			})
		},
		"watch": func(out string) {
			cg := e.group("bundle-update")
			contains(t, out, "Running", cg.Status.WorkflowID)
			// The Web UI's workflow list, filtered by the search attribute, in a browser.
			list := fmt.Sprintf("http://127.0.0.1:%d/namespaces/nudgeflow/workflows?query=%s", e.p.ui,
				url.QueryEscape(`ChangeGroup="bundle-update"`))
			world.Eventually(t, 3*time.Minute, "chromium shows the workflow in the filtered Web UI list", func() (bool, error) {
				dom, err := dumpDOM(t, e.browser, list)
				if err != nil {
					return false, err
				}
				if strings.Contains(dom, cg.Status.WorkflowID) && strings.Contains(dom, "Running") {
					return true, nil
				}
				return false, fmt.Errorf("Web UI DOM lacks %s: %.3000s", cg.Status.WorkflowID, dom)
			})
		},
		"build-last": func(out string) {
			cg := e.group("bundle-update")
			if cg.Status.Phase != appstudiov1alpha1.PhaseReady || cg.Status.Ready != "4/4" {
				t.Fatalf("bundle-update phase %s ready %s, want Ready 4/4", cg.Status.Phase, cg.Status.Ready)
			}
			e.page("/"+bundleRepo+"/pull/1", `id="pr-state">open<`, `id="ci-count">1<`)
			prs := e.pulls()
			if len(prs) != 1 || prs[0].Draft {
				t.Fatalf("want one PR ready for review, got %+v", prs)
			}
			csv, err := e.forge.fileAt(bundleRepo, prs[0].Head.SHA, devenv.CSVPath)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range devenv.Nudgers {
				// Operands by their distribution repository (the demo's ReleasePlanAdmission).
				contains(t, csv, devenv.ReferenceOf(e.p.registryHost(), c)+"@"+devenv.DigestOf(devenv.DemoNamespace, c, 1))
			}
			contains(t, out, "Ready")
		},
		"merge": func(out string) {
			cg := e.group("bundle-update")
			if cg.Status.Phase != appstudiov1alpha1.PhaseCompleted {
				t.Fatalf("bundle-update phase %s, want Completed", cg.Status.Phase)
			}
			contains(t, out, "merged "+bundleRepo+"#1", "Completed")
			e.page("/"+bundleRepo+"/pull/1", `id="pr-state">merged<`, `id="ci-count">1<`)
			world.Eventually(t, 30*time.Second, "the ChangeGroup workflow completes", func() (bool, error) {
				if s := e.workflowStatus(cg.Status.WorkflowID); s != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
					return false, fmt.Errorf("status %s", s)
				}
				return true, nil
			})
		},
		"overrides": func(out string) {
			cg := e.group("bundle-hotfix")
			if cg.Status.Phase != appstudiov1alpha1.PhaseReady || cg.Status.Ready != "1/2" {
				t.Fatalf("bundle-hotfix phase %s ready %s, want Ready 1/2 (operand-b dropped, released now)", cg.Status.Phase, cg.Status.Ready)
			}
			states := map[string]appstudiov1alpha1.ComponentState{}
			for _, c := range cg.Status.Components {
				states[c.Name] = c.State
			}
			if states["operand-b"] != appstudiov1alpha1.ComponentDropped || states["operand-a"] != appstudiov1alpha1.ComponentReady {
				t.Fatalf("want operand-b Dropped and operand-a Ready, got %v", states)
			}
			contains(t, out, "releasing with 1 of 2 components ready")
			e.page("/"+bundleRepo+"/pull/2", `id="pr-state">open<`, `id="ci-count">1<`)
			if prs := e.groupPulls(); len(prs) != 2 {
				t.Fatalf("want two PRs (one per group), got %+v", prs)
			}
		},
		"pr-group": func(out string) {
			contains(t, out, "opened "+e.forge.base+"/"+devenv.DemoNamespace+"/operand-a/pull/1", "pull-request build")
			pr := e.prGroupPR(func(p pull) bool { return p.State == "open" && p.Draft })
			e.page(fmt.Sprintf("/%s/pull/%d", bundleRepo, pr.Number), `id="pr-state">draft<`, "PR group", devenv.DemoNamespace+"/operand-a#1",
				"Do not merge this pull request out of order")
			// The step's listing runs right after the build succeeded; the bridge routes
			// the build to its group a moment later (longer on a loaded machine), so the
			// same listing is run again until the group is there.
			want := "prgroup/" + devenv.DemoNamespace + "/my-feature/" + devenv.Bundle
			listed := out
			world.Eventually(t, time.Minute, "the PR group's workflow is listed", func() (bool, error) {
				if strings.Contains(listed, want) {
					return true, nil
				}
				listed = sh.run(t, step{id: "pr-group-list", script: `temporal workflow list --query 'PRGroup="my-feature"'`}, time.Minute)
				return strings.Contains(listed, want), fmt.Errorf("not listed: %s", listed)
			})
		},
		"pr-group-merge": func(out string) {
			contains(t, out, "merged "+devenv.DemoNamespace+"/operand-a#1")
			pr := e.prGroupPR(func(p pull) bool { return p.State == "open" && !p.Draft })
			e.page(fmt.Sprintf("/%s/pull/%d", bundleRepo, pr.Number), `id="pr-state">open<`, "safe to merge", "push build")
		},
		"gitlab-hold": func(out string) {
			cg := e.group("gitlab-bundle-update")
			mrURL := fmt.Sprintf("http://127.0.0.1:%d/%s/%s/-/merge_requests/1", e.p.gitlab, devenv.DemoNamespace, devenv.GitLabBundle)
			if cg.Status.PullRequestURL != mrURL || cg.Status.Ready != "1/2" {
				t.Fatalf("gitlab-bundle-update: pullRequestURL %q ready %q, want %q 1/2", cg.Status.PullRequestURL, cg.Status.Ready, mrURL)
			}
			contains(t, out, mrURL)
			e.pageAt(mrURL, `id="mr-state">draft<`, `id="ci-count">0<`, "Draft: Update "+devenv.GitLabBundle, "[skip ci]")
		},
		"gitlab-release": func(out string) {
			cg := e.group("gitlab-bundle-update")
			if cg.Status.Phase != appstudiov1alpha1.PhaseReady || cg.Status.Ready != "2/2" {
				t.Fatalf("gitlab-bundle-update phase %s ready %s, want Ready 2/2", cg.Status.Phase, cg.Status.Ready)
			}
			body := e.pageAt(cg.Status.PullRequestURL, `id="mr-state">opened<`, `id="ci-count">1<`)
			if strings.Contains(body, "Draft:") {
				t.Fatalf("the released MR keeps its Draft: prefix:\n%s", body)
			}
			contains(t, out, "gitlab-bundle-update")
		},
		"gitlab-merge": func(out string) {
			cg := e.group("gitlab-bundle-update")
			if cg.Status.Phase != appstudiov1alpha1.PhaseCompleted {
				t.Fatalf("gitlab-bundle-update phase %s, want Completed", cg.Status.Phase)
			}
			contains(t, out, "merged "+devenv.DemoNamespace+"/"+devenv.GitLabBundle+"#1")
			e.pageAt(cg.Status.PullRequestURL, `id="mr-state">merged<`, `id="ci-count">1<`)
		},
		"validated": func(out string) {
			if cg := e.group("bundle-hotfix"); cg.Status.Phase != appstudiov1alpha1.PhaseCompleted {
				t.Fatalf("bundle-hotfix phase %s, want Completed", cg.Status.Phase)
			}
			if run := e.renovateRun(); !strings.Contains(run.Annotations[renovate.AnnotationWorkflowID], "/"+devenv.Bundle) {
				t.Fatalf("the Renovate run belongs to %q, want a nudge of %s", run.Annotations[renovate.AnnotationWorkflowID], devenv.Bundle)
			}
			contains(t, out, "validated-nudge/"+devenv.DemoNamespace+"/"+devenv.Operator+"/"+devenv.Bundle)
			// The stack's runner runs it with the pinned Renovate: the nudge PR appears.
			pr := e.nudgePR(devenv.Operator)
			// Renovate's title names the digest ("Update operator to d1d64bd", with a
			// chore(deps): prefix where the repository's history uses semantic commits).
			digest := devenv.DigestOf(devenv.DemoNamespace, devenv.Operator, e.builds(devenv.Operator))
			e.page(fmt.Sprintf("/%s/pull/%d", bundleRepo, pr.Number), `id="pr-state">open<`,
				devenv.Operator+" to "+strings.TrimPrefix(digest, "sha256:")[:7])
		},
	}

	sh = startShell(t, dir, childEnv)
	seen := map[string]bool{}
	for _, st := range readmeSteps(t) {
		if strings.HasPrefix(st.id, forgejoStep) {
			continue // they need `nudgeflow-dev dev --forgejo`: TestForgejoWalkthrough runs them
		}
		check, ok := checks[st.id]
		if !ok {
			t.Fatalf("README step %q has no check in this test", st.id)
		}
		seen[st.id] = true
		check(sh.run(t, st, 5*time.Minute))
	}
	for id := range checks {
		if !seen[id] {
			t.Fatalf("the README lost walkthrough step %q", id)
		}
	}

	// The validated nudge's Renovate run ran: its Nudge workflow completed.
	renovateRun := e.renovateRun()
	nudgeID := renovateRun.Annotations[renovate.AnnotationWorkflowID]
	world.Eventually(t, time.Minute, "the validated nudge's Nudge workflow completes after its Renovate run", func() (bool, error) {
		if s := e.workflowStatus(nudgeID); s != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
			return false, fmt.Errorf("status %s", s)
		}
		return true, nil
	})
	nudgePRs := len(e.pulls()) - len(e.groupPulls())

	// Ctrl-C, then `make run` again: everything resumes, nothing is duplicated.
	d.interrupt(t)
	contains(t, d.out.String(), "stopped; the state stays in "+home)
	d2, took := startDev(t, dir, childEnv, e.p)
	t.Logf("later start, resuming: ready after %s", took)
	e.connect()
	for _, name := range []string{"bundle-update", "bundle-hotfix", "gitlab-bundle-update"} {
		if cg := e.group(name); cg.Status.Phase != appstudiov1alpha1.PhaseCompleted {
			t.Fatalf("after the restart %s is %s, want Completed", name, cg.Status.Phase)
		}
	}
	// The two ChangeGroups' merged PRs, and the PR group's, ready (newest first).
	if prs := e.groupPulls(); len(prs) != 3 || prs[0].State != "open" || prs[0].Draft || !prs[1].Merged || !prs[2].Merged {
		t.Fatalf("after the restart want the PR group's ready PR and the two merged PRs, got %+v", prs)
	}
	if n := len(e.pulls()) - len(e.groupPulls()); n != nudgePRs {
		t.Fatalf("after the restart want the %d nudge PRs Renovate opened, got %d", nudgePRs, n)
	}
	// The restarted registry holds the builds' images again (it keeps them in memory).
	reg, err := devenv.RegistryClient(home)
	if err != nil {
		t.Fatal(err)
	}
	n := e.builds(devenv.Operator)
	tag := fmt.Sprintf("nudgeflow-demo/%s:on-push-%d", devenv.Operator, n)
	if got, err := reg.Resolve(context.Background(), tag); err != nil || got != devenv.DigestOf(devenv.DemoNamespace, devenv.Operator, n) {
		t.Fatalf("after the restart %s resolves to %q (%v), want the build's digest", tag, got, err)
	}
	e.page("/ci", fmt.Sprintf(`href="/%s/pull/1"`, bundleRepo))
	if s := e.workflowStatus(e.group("bundle-update").Status.WorkflowID); s != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("after the restart the workflow is %s", s)
	}
	e.secondBuildUpdatesTheNudgePR(sh)
	d2.interrupt(t)
}

// secondBuildUpdatesTheNudgePR: with no group collecting it, a build of operand-c
// is nudged at once (Renovate opens its nudge PR), and a second build lands in
// that same PR: Renovate, told no user name of the SCM Secret's, recognises the
// PR and the commit it made as its own (the dev stack's bot token acts as an
// App's bot user, and its platform-native commits carry that bot's address).
func (e *env) secondBuildUpdatesTheNudgePR(sh *shell) {
	t := e.t
	const c = "operand-c"
	out := sh.run(t, step{id: "immediate-build", script: "nudgeflow-dev dev build " + c}, 5*time.Minute)
	contains(t, out, "succeeded")
	first := e.nudgePR(c)
	body := e.page(fmt.Sprintf("/%s/pull/%d", bundleRepo, first.Number), "Image created from")
	if strings.Contains(body, "Image created from &#39;&#39;") || strings.Contains(body, "Image created from ''") {
		t.Fatalf("the nudge PR names an empty source:\n%s", body)
	}
	out = sh.run(t, step{id: "second-build", script: "nudgeflow-dev dev build " + c}, 5*time.Minute)
	contains(t, out, "succeeded")
	second := e.nudgePR(c) // the open nudge PR whose head has the second build's digest
	if second.Number != first.Number {
		t.Fatalf("the second build of %s opened PR #%d; want it in nudge PR #%d", c, second.Number, first.Number)
	}
	t.Logf("a second build of %s updated nudge PR #%d to %s", c, second.Number, devenv.DigestOf(devenv.DemoNamespace, c, e.builds(c)))
}

// renovateRun is the one Renovate PipelineRun nudgeflow launched.
func (e *env) renovateRun() *tektonv1.PipelineRun {
	e.t.Helper()
	var runs tektonv1.PipelineRunList
	if err := e.kube.List(context.Background(), &runs, ctrlclient.InNamespace(devenv.DemoNamespace),
		ctrlclient.MatchingLabels{renovate.LabelManagedBy: renovate.ManagedByNudgeflow}); err != nil {
		e.t.Fatal(err)
	}
	// The validated nudge's run; the PR group walkthrough's push build of operand-a
	// also nudges through the push path (an immediate nudge of its own).
	var validated []tektonv1.PipelineRun
	for _, r := range runs.Items {
		if r.Annotations[renovate.AnnotationNudgingComponent] == devenv.Operator {
			validated = append(validated, r)
		}
	}
	if len(validated) != 1 {
		e.t.Fatalf("want one Renovate PipelineRun of the operator's validated nudge launched by nudgeflow, got %d of %d", len(validated), len(runs.Items))
	}
	return &validated[0]
}
