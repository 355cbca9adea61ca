// Package devenv_test proves `make run`: it builds the binary, starts `nudgeflow-dev dev`
// on free ports with a fresh state folder, runs the README's walkthrough command by
// command in one bash session, checks what each step promises (also in a headless
// chromium), stops it with SIGINT and resumes it.
package devenv_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nudgeflow/nudgeflow/test/devenv"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// toolEnv resolves the tools once (hack/tools.sh builds what is missing) and hands
// their paths to every child, so `nudgeflow-dev dev env` finds them too.
func toolEnv(t *testing.T) []string {
	t.Helper()
	assets, err := localenv.KubeAssets()
	if err != nil {
		t.Fatal(err)
	}
	temporal, err := localenv.TemporalCLI()
	if err != nil {
		t.Fatal(err)
	}
	kubectl, err := localenv.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	renovateBin, err := localenv.Renovate()
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		// What the walkthrough must set itself (eval "$(nudgeflow-dev dev env)").
		if k, _, _ := strings.Cut(kv, "="); k == "KUBECONFIG" || strings.HasPrefix(k, "TEMPORAL_") || k == "NUDGEFLOW_FORGE_URL" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "KUBEBUILDER_ASSETS="+assets, "TEMPORAL_CLI="+temporal, "KUBECTL="+kubectl, "RENOVATE="+renovateBin)
}

// buildBinary builds bin/nudgeflow and bin/nudgeflow-dev inside dir, as `make run`
// does in a clone: the dev binary runs the stack, and the walkthrough's commands
// of the shipped binary (nudgeflow changegroup ...) find it beside it on the PATH
// that `nudgeflow-dev dev env` prints.
func buildBinary(t *testing.T, dir string) {
	t.Helper()
	for _, b := range []struct{ name, module string }{{"nudgeflow", "."}, {"nudgeflow-dev", "test"}} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", b.name), "./cmd/"+b.name)
		cmd.Dir = filepath.Join(localenv.RepoRoot(), b.module)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.name, err, out)
		}
	}
}

type ports struct{ apiserver, temporal, ui, forge, hook, gitlab, forgejo, registry int }

// registryHost is the image registry of a stack on p, as image references name it.
func (p ports) registryHost() string { return "127.0.0.1:" + strconv.Itoa(p.registry) }

// freePorts picks eight free ports below the kernel's ephemeral range (32768 and up),
// so the control plane's own free-port choices (etcd's) cannot land on them between
// the pick and the start.
func freePorts(t *testing.T) ports {
	t.Helper()
	var p []int
	for port := 20000 + rand.IntN(10000); len(p) < 8 && port < 32000; port++ {
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			_ = l.Close()
			p = append(p, port)
		}
	}
	if len(p) < 8 {
		t.Fatal("no eight free ports between 20000 and 32000")
	}
	return ports{p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]}
}

// setUp builds bin/nudgeflow-dev into a fresh folder and returns that folder, the
// state folder inside it (whose logs a failed test keeps), the environment of
// `nudgeflow-dev dev` with that state folder, and free ports.
func setUp(t *testing.T) (dir, home string, env []string, p ports) {
	t.Helper()
	dir = t.TempDir()
	home = filepath.Join(dir, "state")
	keepLogs(t, home)
	buildBinary(t, dir)
	return dir, home, append(toolEnv(t), devenv.HomeEnv+"="+home), freePorts(t)
}

// keepLogs copies the servers' logs out of the state folder when the test failed.
func keepLogs(t *testing.T, home string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		keep, err := os.MkdirTemp("", "devenv-logs-")
		if err == nil {
			err = os.CopyFS(keep, os.DirFS(filepath.Join(home, "logs")))
		}
		t.Logf("nudgeflow-dev dev's logs: %s (%v)", keep, err)
	})
}

// dev is a running `nudgeflow-dev dev`.
type dev struct {
	cmd  *exec.Cmd
	out  *world.LogBuffer
	done chan error
}

// devArgs is `nudgeflow-dev dev` on ports p, then extra.
func devArgs(p ports, extra ...string) []string {
	return append([]string{"dev",
		"--apiserver-port", strconv.Itoa(p.apiserver), "--temporal-port", strconv.Itoa(p.temporal),
		"--ui-port", strconv.Itoa(p.ui), "--forge-port", strconv.Itoa(p.forge), "--forge-hook-port", strconv.Itoa(p.hook),
		"--gitlab-port", strconv.Itoa(p.gitlab), "--forgejo-port", strconv.Itoa(p.forgejo),
		"--registry-port", strconv.Itoa(p.registry),
		// The walkthrough awaits Renovate PipelineRuns: the Renovate writer, pinned.
		"--immediate-writer=renovate"}, extra...)
}

// startDev starts `nudgeflow-dev dev` (with extra flags) and waits for its ready banner.
func startDev(t *testing.T, dir string, env []string, p ports, extra ...string) (*dev, time.Duration) {
	t.Helper()
	began := time.Now()
	d := &dev{out: &world.LogBuffer{}, done: make(chan error, 1)}
	d.cmd = exec.Command(filepath.Join(dir, "bin", "nudgeflow-dev"), devArgs(p, extra...)...)
	d.cmd.Dir, d.cmd.Env, d.cmd.Stdout, d.cmd.Stderr = dir, env, d.out, d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			_ = d.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-d.done:
			case <-time.After(60 * time.Second):
				_ = d.cmd.Process.Kill()
			}
		}
		if t.Failed() {
			t.Logf("nudgeflow-dev dev output:\n%s", d.out.String())
		}
	})
	deadline := time.After(5 * time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(d.out.String(), "nudgeflow-dev dev is ready") {
		select {
		case err := <-d.done:
			t.Fatalf("nudgeflow-dev dev exited before ready (%v):\n%s", err, d.out.String())
		case <-deadline:
			t.Fatalf("nudgeflow-dev dev not ready after 5 minutes:\n%s", d.out.String())
		case <-tick.C:
		}
	}
	return d, time.Since(began)
}

// interrupt sends Ctrl-C's signal and expects a clean exit.
func (d *dev) interrupt(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatalf("nudgeflow-dev dev after SIGINT: %v\n%s", err, d.out.String())
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("nudgeflow-dev dev did not stop within 90s of SIGINT:\n%s", d.out.String())
	}
}

// step is one marked ```sh block of the walkthrough.
type step struct{ id, script string }

var stepRE = regexp.MustCompile("(?s)<!-- walkthrough: ([a-z0-9-]+) -->\n```sh\n(.*?)\n```")

// walkthroughPages hold the walkthrough, in the order a person reads it: the
// README's five minutes, then its continuation.
var walkthroughPages = []string{"README.md", filepath.Join("docs", "walkthrough.md")}

func readmeSteps(t *testing.T) []step {
	t.Helper()
	var steps []step
	for _, page := range walkthroughPages {
		b, err := os.ReadFile(filepath.Join(localenv.RepoRoot(), page))
		if err != nil {
			t.Fatal(err)
		}
		found := stepRE.FindAllStringSubmatch(string(b), -1)
		if len(found) == 0 {
			t.Fatalf("%s has no <!-- walkthrough: ID --> blocks", page)
		}
		for _, m := range found {
			steps = append(steps, step{id: m[1], script: m[2]})
		}
	}
	return steps
}

// shell is one bash session, as a person's second terminal: exports persist
// from block to block, and a failing command ends it (set -e).
type shell struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	dir   string
	n     int
}

const doneMarker = "__WALKTHROUGH_STEP_DONE__"

func startShell(t *testing.T, dir string, env []string) *shell {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &shell{lines: make(chan string, 1024), dir: dir}
	s.cmd = exec.Command("bash", "--noprofile", "--norc")
	s.cmd.Dir, s.cmd.Env, s.cmd.Stdout, s.cmd.Stderr = dir, env, w, w
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = s.in.Close()
		_ = s.cmd.Wait()
	})
	if _, err := io.WriteString(s.in, "set -eo pipefail\n"); err != nil {
		t.Fatal(err)
	}
	return s
}

// run runs one block exactly as written and returns its output.
func (s *shell) run(t *testing.T, st step, timeout time.Duration) string {
	t.Helper()
	s.n++
	file := filepath.Join(s.dir, fmt.Sprintf("step-%02d-%s.sh", s.n, st.id))
	if err := os.WriteFile(file, []byte(st.script+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(s.in, "source %q\necho %s\n", file, doneMarker); err != nil {
		t.Fatalf("step %s: the shell is gone: %v", st.id, err)
	}
	var out strings.Builder
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				t.Fatalf("step %s failed (the shell exited, set -e):\n%s\n--- output ---\n%s", st.id, st.script, out.String())
			}
			if line == doneMarker {
				t.Logf("step %s:\n%s\n--- output ---\n%s", st.id, st.script, out.String())
				return out.String()
			}
			out.WriteString(line + "\n")
		case <-deadline:
			t.Fatalf("step %s still running after %s:\n%s", st.id, timeout, out.String())
		}
	}
}

// httpGet returns the body of a 200 answer.
func httpGet(url string, header ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b), nil
}

// forgeAPI reads the emulator's REST API with the demo maintainer's token.
type forgeAPI struct{ base, token string }

func (f forgeAPI) get(path string, into any) error {
	body, err := httpGet(f.base+"/api/v3/"+path, "Authorization", "Bearer "+f.token)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(body), into)
}

// fileAt reads a file at a commit through the Git data API, as a client would.
func (f forgeAPI) fileAt(repo, sha, path string) (string, error) {
	var c struct {
		Tree struct{ SHA string } `json:"tree"`
	}
	if err := f.get("repos/"+repo+"/git/commits/"+sha, &c); err != nil {
		return "", err
	}
	var tree struct {
		Tree []struct{ Path, SHA string } `json:"tree"`
	}
	if err := f.get("repos/"+repo+"/git/trees/"+c.Tree.SHA+"?recursive=1", &tree); err != nil {
		return "", err
	}
	for _, e := range tree.Tree {
		if e.Path == path {
			var blob struct{ Content string }
			if err := f.get("repos/"+repo+"/git/blobs/"+e.SHA, &blob); err != nil {
				return "", err
			}
			b, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(blob.Content, "\n", ""))
			return string(b), err
		}
	}
	return "", fmt.Errorf("no %s at %s", path, sha)
}

// chromium returns Debian's chromium, installing it with apt-get when missing.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Geteuid() != 0 {
		t.Fatal("the browser test needs chromium: apt-get install -y chromium (as root)")
	}
	for _, args := range [][]string{{"update"}, {"install", "-y", "--no-install-recommends", "chromium"}} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("apt-get %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium after apt-get install: %v", err)
	}
	return p
}

// dumpDOM loads url in headless chromium and returns the DOM after scripts ran.
func dumpDOM(t *testing.T, browser, url string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir="+t.TempDir(), "--virtual-time-budget=20000", "--dump-dom", url)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("chromium --dump-dom %s: %w\n%s", url, err, stderr.String())
	}
	return string(out), nil
}
