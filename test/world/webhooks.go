package world

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// selectWebhooks writes into dir the webhook configurations of manifests (files or
// folders of YAML, as envtest reads them) keeping only the webhooks named in names,
// and returns the file's path. A package that runs only some of the bridge's features
// installs only their webhooks: a registered webhook nobody serves would refuse (or,
// failing open, silently skip) requests the package's tests make.
func selectWebhooks(manifests []string, names []string, dir string) (string, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var files []string
	for _, m := range manifests {
		info, err := os.Stat(m)
		if err != nil {
			return "", fmt.Errorf("webhook manifests: %w", err)
		}
		if !info.IsDir() {
			files = append(files, m)
			continue
		}
		entries, err := os.ReadDir(m)
		if err != nil {
			return "", fmt.Errorf("webhook manifests: %w", err)
		}
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				files = append(files, filepath.Join(m, e.Name()))
			}
		}
	}
	var out bytes.Buffer
	found := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("webhook manifests: %w", err)
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return "", fmt.Errorf("reading %s: %w", f, err)
			}
			var obj map[string]any
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				return "", fmt.Errorf("parsing %s: %w", f, err)
			}
			kind, _ := obj["kind"].(string)
			if !strings.HasSuffix(kind, "WebhookConfiguration") {
				continue
			}
			hooks, _ := obj["webhooks"].([]any)
			var kept []any
			for _, h := range hooks {
				hm, _ := h.(map[string]any)
				if name, _ := hm["name"].(string); want[name] {
					kept = append(kept, h)
					found[name] = true
				}
			}
			if len(kept) == 0 {
				continue
			}
			obj["webhooks"] = kept
			b, err := yaml.Marshal(obj)
			if err != nil {
				return "", err
			}
			out.WriteString("---\n")
			out.Write(b)
		}
	}
	for _, n := range names {
		if !found[n] {
			return "", fmt.Errorf("webhook %q is in none of %v", n, manifests)
		}
	}
	path := filepath.Join(dir, "webhooks.yaml")
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		return "", err
	}
	return path, nil
}
