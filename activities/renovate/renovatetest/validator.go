// Package renovatetest runs Renovate's own renovate-config-validator on generated
// configs, for tests. The validator comes from RENOVATE_CONFIG_VALIDATOR or from
// `hack/tools.sh path renovate-config-validator`, which installs
// the pinned npm package into the tool cache on first use.
package renovatetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// Validate writes each config (name -> JSON) into a temporary folder and runs the
// validator on it as a global config (the way the Renovate PipelineRun passes it,
// through RENOVATE_CONFIG_FILE). It returns the validator's output for each config
// and an error naming every config it rejected.
func Validate(ctx context.Context, configs map[string][]byte) (map[string]string, error) {
	validator, err := validatorPath()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "renovate-configs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	names := make([]string, 0, len(configs))
	for n := range configs {
		names = append(names, n)
	}
	sort.Strings(names)
	outputs := map[string]string{}
	var failed []string
	for _, n := range names {
		file := filepath.Join(dir, n+".json")
		if err := os.WriteFile(file, configs[n], 0o600); err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, validator, "--strict")
		cmd.Env = append(os.Environ(), "RENOVATE_CONFIG_FILE="+file, "LOG_LEVEL=info")
		out, err := cmd.CombinedOutput()
		outputs[n] = string(out)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v\n%s", n, err, out))
		}
	}
	if len(failed) > 0 {
		return outputs, fmt.Errorf("renovate-config-validator rejected %d config(s):\n%s", len(failed), strings.Join(failed, "\n"))
	}
	return outputs, nil
}

// WithHostRules returns a copy of a generated config with hostRules (the JSON that
// the run passes as RENOVATE_HOST_RULES) merged in, so the validator checks the
// configuration Renovate really runs with. For tests only: the real config never
// holds them, the password stays in the run's Secret.
func WithHostRules(config, hostRules []byte) ([]byte, error) {
	var c map[string]any
	if err := json.Unmarshal(config, &c); err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	var rules []any
	if err := json.Unmarshal(hostRules, &rules); err != nil {
		return nil, fmt.Errorf("reading the host rules: %w", err)
	}
	c["hostRules"] = rules
	out, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("rendering the merged config: %w", err)
	}
	return out, nil
}

// validatorPath is RENOVATE_CONFIG_VALIDATOR (the Makefile exports it), else what
// hack/tools.sh installs (found from this source file, so any package's tests find it).
func validatorPath() (string, error) {
	if p := os.Getenv("RENOVATE_CONFIG_VALIDATOR"); p != "" {
		return p, nil
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "..", "hack", "tools.sh")
	cmd := exec.Command(script, "path", "renovate-config-validator")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/tools.sh path renovate-config-validator: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
