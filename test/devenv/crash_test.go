package devenv_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/test/devenv"
)

// TestCrashRecovery proves that `make run` starts again after `kill -9` of
// `nudgeflow-dev dev`, with the real servers: first the servers die with it (the
// parent-death signal); then, started without that signal so they outlive it, the
// next start finds them in running.json and stops them. The state survives both.
func TestCrashRecovery(t *testing.T) {
	dir, home, env, p := setUp(t)

	d1, _ := startDev(t, dir, env, p)
	first := readRunning(t, home)
	if first.Owner.PID != d1.cmd.Process.Pid || !first.Owner.Alive() {
		t.Fatalf("running.json names owner %+v, want the live pid %d", first.Owner, d1.cmd.Process.Pid)
	}
	wantServers(t, first)
	createMarker(t, home)

	// A second start on the same state folder refuses, naming the first.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	second := exec.CommandContext(ctx, filepath.Join(dir, "bin", "nudgeflow-dev"), devArgs(p)...)
	second.Dir, second.Env = dir, env
	out, err := second.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "nudgeflow-dev dev is already running with this state folder, pid "+strconv.Itoa(d1.cmd.Process.Pid)) {
		t.Fatalf("a second nudgeflow-dev dev on the same state folder: %v\n%s", err, out)
	}

	// kill -9: the kernel kills the servers with it, before anything starts again.
	d1.kill(t)
	waitGone(t, first.Children)

	// The next start cleans up and resumes; this time the servers are started
	// without the parent-death signal, so the next crash leaves them running.
	d2, _ := startDev(t, dir, env, p, "--no-parent-death-signal")
	contains(t, d2.out.String(), "did not stop cleanly: cleaning up")
	checkState(t, home)
	orphans := readRunning(t, home).Children
	wantServers(t, &devenv.Running{Children: orphans})

	d2.kill(t)
	for _, o := range orphans {
		if !o.Alive() {
			t.Fatalf("%s died with nudgeflow-dev dev although started without the parent-death signal", o)
		}
	}
	d3, _ := startDev(t, dir, env, p)
	for _, o := range orphans {
		contains(t, d3.out.String(), "stopped "+o.String()+", left running by a crashed `nudgeflow-dev dev`")
		if o.Alive() {
			t.Fatalf("%s of the crashed run still runs after the next start", o)
		}
	}
	checkState(t, home)

	// Ctrl-C removes running.json.
	d3.interrupt(t)
	if _, err := os.Stat(filepath.Join(home, "running.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("running.json after a clean stop: %v", err)
	}
}

// kill is kill -9 of `nudgeflow-dev dev`.
func (d *dev) kill(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		t.Fatal("nudgeflow-dev dev still running 30s after SIGKILL")
	}
}

func readRunning(t *testing.T, home string) *devenv.Running {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, "running.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r devenv.Running
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// wantServers checks that r names the three live servers.
func wantServers(t *testing.T, r *devenv.Running) {
	t.Helper()
	names := map[string]bool{}
	for _, c := range r.Children {
		if !c.Alive() {
			t.Fatalf("running.json names %s, which does not run", c)
		}
		names[c.Name] = true
	}
	for _, n := range []string{"kube-apiserver", "etcd", "temporal"} {
		if !names[n] {
			t.Fatalf("running.json names no %s among %+v", n, r.Children)
		}
	}
}

// waitGone waits until none of procs runs.
func waitGone(t *testing.T, procs []devenv.Proc) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for _, p := range procs {
		for p.Alive() {
			if time.Now().After(deadline) {
				t.Fatalf("%s still runs 30s after nudgeflow-dev dev was killed", p)
			}
			<-tick.C
		}
	}
}

func kubeClient(t *testing.T, home string) ctrlclient.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(home, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: kube.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const marker = "crash-recovery-marker"

// createMarker writes a ConfigMap that only etcd's data can bring back.
func createMarker(t *testing.T, home string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: devenv.DemoNamespace, Name: marker}, Data: map[string]string{"written": "before the crash"}}
	if err := kubeClient(t, home).Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
}

// checkState checks that the cluster kept the marker and the demo's Components.
func checkState(t *testing.T, home string) {
	t.Helper()
	c := kubeClient(t, home)
	var cm corev1.ConfigMap
	if err := c.Get(context.Background(), ctrlclient.ObjectKey{Namespace: devenv.DemoNamespace, Name: marker}, &cm); err != nil {
		t.Fatalf("the ConfigMap written before the crash: %v", err)
	}
	var comps mirrorv1alpha1.ComponentList
	if err := c.List(context.Background(), &comps, ctrlclient.InNamespace(devenv.DemoNamespace)); err != nil {
		t.Fatal(err)
	}
	if len(comps.Items) == 0 {
		t.Fatal("no Components in the demo namespace after the restart")
	}
}
