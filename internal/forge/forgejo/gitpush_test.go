package forgejo

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"
)

// git runs git in dir and returns its trimmed output.
func git(t *testing.T, dir string, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, dir, path, content string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// The trees and pack the push builds are git's own: the root tree is the one
// git writes for the same change (a nested file, an executable one keeping its
// mode, a file in new directories, beside a symlink and a directory that sorts
// after a same-prefix file), and git takes the pack.
func TestBuildTreesIsGitsTree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed on PATH")
	}
	dir := t.TempDir()
	git(t, dir, nil, "init", "-q")
	write(t, dir, "Dockerfile", "FROM a@sha256:old\n", 0o644)
	write(t, dir, ".tekton/push.yaml", "image: a@sha256:old\n", 0o644)
	write(t, dir, ".tekton.yaml", "x\n", 0o644)
	write(t, dir, "bundle/manifests/csv.yaml", "image: a@sha256:old\n", 0o644)
	write(t, dir, "hack/run.sh", "#!/bin/sh\n# a@sha256:old\n", 0o755)
	if err := os.Symlink("Dockerfile", filepath.Join(dir, "Containerfile")); err != nil {
		t.Fatal(err)
	}
	git(t, dir, nil, "add", "-A")
	git(t, dir, nil, "commit", "-qm", "base")

	var entries []gitea.GitEntry
	for _, line := range strings.Split(git(t, dir, nil, "ls-tree", "-r", "-t", "HEAD"), "\n") {
		meta, path, _ := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		mode := f[0]
		if f[1] == "tree" {
			mode = "040000" // as the API lists it
		}
		entries = append(entries, gitea.GitEntry{Path: path, Mode: mode, Type: f[1], SHA: f[2]})
	}
	files := map[string][]byte{
		"Dockerfile":                []byte("FROM a@sha256:new\n"),
		"bundle/manifests/csv.yaml": []byte("image: a@sha256:new\n"),
		"hack/run.sh":               []byte("#!/bin/sh\n# a@sha256:new\n"),
		"deploy/base/new.yaml":      []byte("image: a@sha256:new\n"),
	}
	objects, root, err := buildTrees(entries, files)
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		mode := os.FileMode(0o644)
		if p == "hack/run.sh" {
			mode = 0o755
		}
		write(t, dir, p, string(c), mode)
	}
	git(t, dir, nil, "add", "-A")
	if want := git(t, dir, nil, "write-tree"); root != want {
		t.Fatalf("root tree %s, git writes %s", root, want)
	}

	// The pack: a fresh repository takes it and holds every object.
	var pack bytes.Buffer
	if err := writePack(&pack, objects); err != nil {
		t.Fatal(err)
	}
	fresh := t.TempDir()
	git(t, fresh, nil, "init", "-q")
	git(t, fresh, pack.Bytes(), "index-pack", "--stdin")
	for _, o := range objects {
		if got := git(t, fresh, nil, "cat-file", "-s", o.name()); got == "" {
			t.Fatalf("object %s missing", o.name())
		}
	}
}

func TestReadReportStatus(t *testing.T) {
	const ref = "refs/heads/konflux/x"
	pkt := func(lines ...string) string {
		var b bytes.Buffer
		for _, l := range lines {
			writePktLine(&b, l+"\n")
		}
		return b.String() + "0000"
	}
	for _, c := range []struct {
		name, in, refused string
		fails             bool
	}{
		{"updated", pkt("unpack ok", "ok "+ref), "", false},
		{"refused", pkt("unpack ok", "ng "+ref+" failed to update ref"), "failed to update ref", false},
		{"not unpacked", pkt("unpack index-pack abnormal exit", "ng "+ref+" unpacker error"), "", true},
		{"silent", pkt("unpack ok"), "", true},
		{"garbage", "HTTP/1.1 200 OK", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			refused, err := readReportStatus(strings.NewReader(c.in), ref)
			if (err != nil) != c.fails || refused != c.refused {
				t.Fatalf("got %q, %v", refused, err)
			}
		})
	}
}
