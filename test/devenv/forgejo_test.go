package devenv_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/test/devenv"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// forgejoStep prefixes the README's walkthrough blocks that need
// `nudgeflow-dev dev --forgejo`.
const forgejoStep = "forgejo-"

const forgejoRepo = devenv.DemoNamespace + "/" + devenv.ForgejoBundle

// giteaAPI reads the real Gitea server of `nudgeflow-dev dev --forgejo` as its admin.
type giteaAPI struct{ base, token string }

func (g giteaAPI) get(path string, into any) error {
	body, err := httpGet(g.base+"/api/v1/"+path, "Authorization", "token "+g.token)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(body), into)
}

type giteaPR struct {
	Number  int    `json:"number"`
	Title   string `json:"title"`
	Body    string `json:"body"`
	State   string `json:"state"`
	Merged  bool   `json:"merged"`
	HTMLURL string `json:"html_url"`
	Head    struct {
		SHA string `json:"sha"`
	} `json:"head"`
}

func (g giteaAPI) pulls(t *testing.T) []giteaPR {
	t.Helper()
	var prs []giteaPR
	if err := g.get("repos/"+forgejoRepo+"/pulls?state=all", &prs); err != nil {
		t.Fatal(err)
	}
	return prs
}

func (g giteaAPI) file(t *testing.T, ref, path string) string {
	t.Helper()
	var c struct{ Content string }
	if err := g.get("repos/"+forgejoRepo+"/contents/"+path+"?ref="+ref, &c); err != nil {
		t.Fatal(err)
	}
	b, err := base64.StdEncoding.DecodeString(c.Content)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// users lists the server's accounts by login.
func (g giteaAPI) users(t *testing.T) []string {
	t.Helper()
	var us []struct{ Login string }
	if err := g.get("admin/users?limit=50", &us); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range us {
		out = append(out, u.Login)
	}
	return out
}

// repos lists the demo organisation's repositories.
func (g giteaAPI) repos(t *testing.T) []string {
	t.Helper()
	var rs []struct {
		FullName string `json:"full_name"`
	}
	if err := g.get("orgs/"+devenv.DemoNamespace+"/repos?limit=50", &rs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		out = append(out, r.FullName)
	}
	return out
}

// gitea connects to the server of the state folder home, with the admin token it stored.
func gitea(t *testing.T, home string, p ports) giteaAPI {
	t.Helper()
	users, err := localenv.ReadForgejoUsers(filepath.Join(home, "forgejo"))
	if err != nil {
		t.Fatal(err)
	}
	return giteaAPI{base: fmt.Sprintf("http://127.0.0.1:%d", p.forgejo), token: users[localenv.ForgejoAdmin]}
}

// TestForgejoWalkthrough runs README.md's Forgejo walkthrough blocks against
// `nudgeflow-dev dev --forgejo` (on a state folder a start without the flag seeded) and
// the real Gitea server: the group collects both
// builds in one work-in-progress PR, releases it, and `nudgeflow-dev dev merge` ends it
// Completed. Then a restart resumes the server's state (the group still Completed,
// no user or repository twice), and after `kill -9` of a run whose servers outlive
// it, the next start stops the Gitea server it left.
func TestForgejoWalkthrough(t *testing.T) {
	dir, home, childEnv, p := setUp(t)
	giteaBin, err := localenv.Gitea()
	if err != nil {
		t.Fatal(err)
	}
	childEnv = append(childEnv, "GITEA="+giteaBin)
	e := &env{t: t, home: home, p: p}

	// The state folder of a `make run` without the flag first: the first --forgejo
	// start adds the third bundle, its edges and its Secret to the seeded namespace.
	d0, _ := startDev(t, dir, childEnv, p)
	if strings.Contains(d0.out.String(), "Forgejo (Gitea)") { // the banner's line with --forgejo
		t.Fatalf("nudgeflow-dev dev without --forgejo mentions Forgejo:\n%s", d0.out.String())
	}
	d0.interrupt(t)

	d, took := startDev(t, dir, childEnv, p, "--forgejo")
	t.Logf("first start with --forgejo: ready after %s", took)
	fjURL := fmt.Sprintf("http://127.0.0.1:%d", p.forgejo)
	contains(t, d.out.String(), fjURL, `"dev"`, `"`+devenv.ForgejoPassword+`"`, "local demo credential")
	e.connect()
	g := gitea(t, home, p)
	envCmd := exec.Command(filepath.Join(dir, "bin", "nudgeflow-dev"), "dev", "env")
	envCmd.Dir, envCmd.Env = dir, childEnv
	envOut, err := envCmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nudgeflow-dev dev env: %v\n%s", err, envOut)
	}
	contains(t, string(envOut), "export NUDGEFLOW_FORGEJO_URL='"+fjURL+"'")
	prURL := fjURL + "/" + forgejoRepo + "/pulls/1"

	checks := map[string]func(out string){
		"forgejo-immediate": func(out string) { checkNudgeLatency(t, out) },
		"env": func(out string) {
			contains(t, out, "component.appstudio.redhat.com/"+devenv.ForgejoBundle, "component.appstudio.redhat.com/fj-operand-a",
				"component.appstudio.redhat.com/fj-operand-b", "AllComponentsExist")
		},
		"forgejo-hold": func(out string) {
			cg := e.group("forgejo-bundle-update")
			if cg.Status.PullRequestURL != prURL || cg.Status.Ready != "1/2" {
				t.Fatalf("forgejo-bundle-update: pullRequestURL %q ready %q, want %q 1/2", cg.Status.PullRequestURL, cg.Status.Ready, prURL)
			}
			contains(t, out, prURL)
			prs := g.pulls(t)
			if len(prs) != 1 || prs[0].State != "open" || !strings.HasPrefix(prs[0].Title, "WIP:") || !strings.Contains(prs[0].Body, "[skip ci]") {
				t.Fatalf("want one open work-in-progress PR on Gitea, got %+v", prs)
			}
		},
		"forgejo-release": func(out string) {
			cg := e.group("forgejo-bundle-update")
			if cg.Status.Phase != appstudiov1alpha1.PhaseReady || cg.Status.Ready != "2/2" {
				t.Fatalf("forgejo-bundle-update phase %s ready %s, want Ready 2/2", cg.Status.Phase, cg.Status.Ready)
			}
			prs := g.pulls(t)
			if len(prs) != 1 || prs[0].State != "open" || strings.HasPrefix(prs[0].Title, "WIP:") {
				t.Fatalf("want the one PR released (no WIP:), got %+v", prs)
			}
			csv := g.file(t, prs[0].Head.SHA, devenv.CSVPath)
			for _, c := range devenv.ForgejoNudgers {
				contains(t, csv, devenv.ImageOf(e.p.registryHost(), c)+"@"+devenv.DigestOf(devenv.DemoNamespace, c, 1))
			}
			contains(t, out, "forgejo-bundle-update")
		},
		"forgejo-merge": func(out string) {
			cg := e.group("forgejo-bundle-update")
			if cg.Status.Phase != appstudiov1alpha1.PhaseCompleted {
				t.Fatalf("forgejo-bundle-update phase %s, want Completed", cg.Status.Phase)
			}
			contains(t, out, "merged "+forgejoRepo+"#1", "Completed")
			if prs := g.pulls(t); len(prs) != 1 || !prs[0].Merged {
				t.Fatalf("want the one PR merged, got %+v", prs)
			}
			world.Eventually(t, 30*time.Second, "the ChangeGroup workflow completes", func() (bool, error) {
				if s := e.workflowStatus(cg.Status.WorkflowID); s != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
					return false, fmt.Errorf("status %s", s)
				}
				return true, nil
			})
		},
	}
	sh := startShell(t, dir, childEnv)
	ran := 0
	for _, st := range readmeSteps(t) {
		if st.id != "env" && !strings.HasPrefix(st.id, forgejoStep) {
			continue // TestWalkthrough runs them, without --forgejo
		}
		check, ok := checks[st.id]
		if !ok {
			t.Fatalf("README step %q has no check in this test", st.id)
		}
		check(sh.run(t, st, 5*time.Minute))
		ran++
	}
	if ran != len(checks) {
		t.Fatalf("ran %d of the %d Forgejo walkthrough steps: the README lost some", ran, len(checks))
	}
	usersBefore := readFile(t, filepath.Join(home, "forgejo", "users.json"))

	// Ctrl-C, then start again (its servers this time outliving it, for the crash
	// below): the Gitea server resumes its folder.
	d.interrupt(t)
	d2, took := startDev(t, dir, childEnv, p, "--forgejo", "--no-parent-death-signal")
	t.Logf("later start with --forgejo, resuming: ready after %s", took)
	e.connect()
	checkForgejoResumed(t, e, g, usersBefore, p.hook)

	// kill -9: the Gitea server, started without the parent-death signal, outlives
	// it; the next start stops it, says so, and resumes.
	var giteaProc *devenv.Proc
	for _, c := range readRunning(t, home).Children {
		if c.Name == "gitea" {
			giteaProc = &c
		}
	}
	if giteaProc == nil || !giteaProc.Alive() {
		t.Fatalf("running.json names no live gitea among %+v", readRunning(t, home).Children)
	}
	d2.kill(t)
	if !giteaProc.Alive() {
		t.Fatalf("%s died with nudgeflow-dev dev although started without the parent-death signal", giteaProc)
	}
	d3, _ := startDev(t, dir, childEnv, p, "--forgejo")
	contains(t, d3.out.String(), "stopped "+giteaProc.String()+", left running by a crashed `nudgeflow-dev dev`")
	if giteaProc.Alive() {
		t.Fatalf("%s of the crashed run still runs after the next start", giteaProc)
	}
	e.connect()
	checkForgejoResumed(t, e, g, usersBefore, p.hook)
	d3.interrupt(t)
}

// checkForgejoResumed checks a restarted `nudgeflow-dev dev --forgejo`: the group is
// still Completed with its one merged PR, the server has its three users (with the
// tokens stored before), one repository and one system webhook, to the bridge's
// receiver on hookPort.
func checkForgejoResumed(t *testing.T, e *env, g giteaAPI, usersBefore string, hookPort int) {
	t.Helper()
	var hooks []struct {
		Config map[string]string `json:"config"`
		Events []string          `json:"events"`
	}
	if err := g.get("admin/hooks?type=system", &hooks); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("http://127.0.0.1:%d/", hookPort); len(hooks) != 1 || hooks[0].Config["url"] != want {
		t.Fatalf("after the restart want one system webhook to %s, got %+v", want, hooks)
	}
	if cg := e.group("forgejo-bundle-update"); cg.Status.Phase != appstudiov1alpha1.PhaseCompleted {
		t.Fatalf("after the restart forgejo-bundle-update is %s, want Completed", cg.Status.Phase)
	}
	if prs := g.pulls(t); len(prs) != 1 || !prs[0].Merged {
		t.Fatalf("after the restart want the one merged PR, got %+v", prs)
	}
	if us := g.users(t); len(us) != 3 {
		t.Fatalf("after the restart want the three users once, got %v", us)
	}
	if rs := g.repos(t); len(rs) != 1 || rs[0] != forgejoRepo {
		t.Fatalf("after the restart want the one repository %s, got %v", forgejoRepo, rs)
	}
	path := filepath.Join(e.home, "forgejo", "users.json")
	if readFile(t, path) != usersBefore {
		t.Fatal("the restart changed the users' tokens")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v, mode %v; want 0600 (it holds tokens)", path, err, fi.Mode().Perm())
	}
	// The person's known password signs in.
	if _, err := httpGet(g.base+"/api/v1/user", "Authorization", "Basic "+
		base64.StdEncoding.EncodeToString([]byte(localenv.ForgejoHuman+":"+devenv.ForgejoPassword))); err != nil {
		t.Fatalf("signing in as %s with the printed password: %v", localenv.ForgejoHuman, err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
