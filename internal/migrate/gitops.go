package migrate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// FileChange is one GitOps file rewritten without build-nudges-ref.
type FileChange struct {
	// Source is the file's path relative to the GitOps folder.
	Source string
	// Output is the patched copy's file name in the output folder.
	Output string
	// Components are the Components whose build-nudges-ref the copy drops.
	Components []string
	Content    []byte
}

// GitOpsChanges finds, below dir, the YAML documents of kind Component whose name is
// one of components and whose namespace is ns or unset (GitOps repositories often leave
// it to the sync target), and returns a copy of each such file with
// spec.build-nudges-ref removed. It edits the YAML tree rather than re-serialising
// objects, so key order and comments survive and the diff a reviewer sees is just
// the removed field.
func GitOpsChanges(dir, ns string, components map[string]bool) ([]FileChange, error) {
	var changes []FileChange
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		content, names, err := dropNudgesRef(raw, ns, components)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(names) == 0 {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		changes = append(changes, FileChange{
			Source:     rel,
			Output:     "component-" + strings.ReplaceAll(filepath.ToSlash(rel), "/", "_"),
			Components: names,
			Content:    content,
		})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scanning GitOps folder %s: %w", dir, err)
	}
	return changes, nil
}

// dropNudgesRef rewrites a multi-document YAML file; it returns the names of the
// Components it changed (none: leave the file alone).
func dropNudgesRef(raw []byte, ns string, components map[string]bool) ([]byte, []string, error) {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var docs []*yaml.Node
	var changed []string
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, nil, fmt.Errorf("parsing YAML: %w", err)
		}
		docs = append(docs, &doc)
		if len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		if !isComponent(root) {
			continue
		}
		md := child(root, "metadata")
		name, docNS := scalar(child(md, "name")), scalar(child(md, "namespace"))
		if !components[name] || (docNS != "" && docNS != ns) {
			continue
		}
		if removeKey(child(root, "spec"), "build-nudges-ref") {
			changed = append(changed, name)
		}
	}
	if len(changed) == 0 {
		return nil, nil, nil
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	for _, doc := range docs {
		if err := enc.Encode(doc); err != nil {
			return nil, nil, fmt.Errorf("writing YAML: %w", err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, nil, err
	}
	return out.Bytes(), changed, nil
}

func isComponent(n *yaml.Node) bool {
	return n.Kind == yaml.MappingNode && scalar(child(n, "kind")) == "Component" &&
		strings.HasPrefix(scalar(child(n, "apiVersion")), "appstudio.redhat.com/")
}

func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

func removeKey(n *yaml.Node, key string) bool {
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			n.Content = append(n.Content[:i], n.Content[i+2:]...)
			return true
		}
	}
	return false
}

// WriteOutput writes, into dir/<namespace>/, the NudgeConfig manifest
// (nudgeconfig.yaml) and the patched Component files. File names sort the Components
// before the NudgeConfig, so `kubectl apply -n NS -f dir/<namespace>` creates the
// Components the webhook looks for first. MIGRATION.txt (ignored by kubectl, which
// only reads .yaml, .yml and .json from a folder) says which GitOps file each copy
// replaces.
func WriteOutput(dir string, p *Plan, changes []FileChange) ([]string, error) {
	out := filepath.Join(dir, p.Namespace)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", out, err)
	}
	u, err := Manifest(p, false)
	if err != nil {
		return nil, err
	}
	manifest, err := sigsyaml.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("rendering the NudgeConfig of %s: %w", p.Namespace, err)
	}
	header := fmt.Sprintf("# NudgeConfig of namespace %s, migrated from build-nudges-ref by `nudgeflow migrate`.\n", p.Namespace)
	files := map[string][]byte{"nudgeconfig.yaml": append([]byte(header), manifest...)}
	var notes strings.Builder
	fmt.Fprintf(&notes, "Migration of namespace %s from build-nudges-ref to NudgeConfig.\n\n", p.Namespace)
	notes.WriteString("Add nudgeconfig.yaml to the GitOps repository and replace each file below with its patched copy\n")
	notes.WriteString("(the copy only drops spec.build-nudges-ref):\n\n")
	for _, c := range changes {
		files[c.Output] = c.Content
		fmt.Fprintf(&notes, "  %s  replaces  %s  (components: %s)\n", c.Output, c.Source, strings.Join(c.Components, ", "))
	}
	files["MIGRATION.txt"] = []byte(notes.String())
	var written []string
	for name, content := range files {
		path := filepath.Join(out, name)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
		written = append(written, path)
	}
	slices.Sort(written)
	return written, nil
}
