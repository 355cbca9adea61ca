// Package localenv starts nudgeflow's real dependencies on this machine: a
// kube-apiserver + etcd control plane with every CRD, and a Temporal dev server.
// Tests and `nudgeflow-dev dev` share it. The binaries come from the tool cache that
// hack/tools.sh fills from the Go module proxy.
package localenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// RepoRoot finds the repository root (the folder holding go.mod) from this
// source file, so tests in any package find deploy/ and hack/.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// toolPath asks hack/tools.sh for a tool, building it when missing. envVar, when set,
// overrides the path (the Makefile exports them so tests do not call the script).
func toolPath(envVar, args string) (string, error) {
	if p := os.Getenv(envVar); p != "" {
		return p, nil
	}
	cmd := exec.Command(filepath.Join(RepoRoot(), "hack", "tools.sh"), strings.Fields(args)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/tools.sh %s: %w", args, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// KubeAssets is the folder with kube-apiserver, etcd and kubectl (KUBEBUILDER_ASSETS).
func KubeAssets() (string, error) { return toolPath("KUBEBUILDER_ASSETS", "assets") }

// TemporalCLI is the Temporal CLI binary (TEMPORAL_CLI).
func TemporalCLI() (string, error) { return toolPath("TEMPORAL_CLI", "path temporal") }

// RenovateConfigValidator is Renovate's config validator, installed from npm by
// hack/tools.sh (RENOVATE_CONFIG_VALIDATOR).
func RenovateConfigValidator() (string, error) {
	return toolPath("RENOVATE_CONFIG_VALIDATOR", "path renovate-config-validator")
}

// Renovate is the pinned Renovate CLI, installed from npm by hack/tools.sh
// (RENOVATE): the dev stack's and the tests' PipelineRun runner runs it.
func Renovate() (string, error) { return toolPath("RENOVATE", "path renovate") }

// Kubectl is the kubectl binary (KUBECTL).
func Kubectl() (string, error) { return toolPath("KUBECTL", "path kubectl") }
