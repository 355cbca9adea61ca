package deploy_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nudgeflow/nudgeflow/test/localenv"
)

// imageBinary is where the image holds nudgeflow; the Deployments run it.
const imageBinary = "/usr/local/bin/nudgeflow"

// containerfile is the Containerfile as instructions (continuation lines joined).
type containerfile struct {
	stages [][]string // instructions per FROM
}

func readContainerfile(t *testing.T) containerfile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(localenv.RepoRoot(), "Containerfile"))
	require.NoError(t, err)
	var cf containerfile
	var cur string
	for _, line := range strings.Split(string(raw), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		inst := cur + trimmed
		cur = ""
		if strings.HasPrefix(inst, "FROM ") {
			cf.stages = append(cf.stages, nil)
		}
		if len(cf.stages) > 0 {
			cf.stages[len(cf.stages)-1] = append(cf.stages[len(cf.stages)-1], inst)
		}
	}
	require.Len(t, cf.stages, 2, "a builder stage and the runtime stage")
	return cf
}

// find returns the instructions of a stage that start with prefix.
func (cf containerfile) find(stage int, prefix string) []string {
	var out []string
	for _, inst := range cf.stages[stage] {
		if strings.HasPrefix(inst, prefix) {
			out = append(out, inst)
		}
	}
	return out
}

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// nudgeflowBinary builds nudgeflow with the Containerfile's own `go build` line
// (only its output path changed), hermetically: GOPROXY=off and no GOFLAGS, so the
// build uses only the module cache `go mod download` fills and never edits go.mod.
// The program test runs this binary: what the image runs.
func nudgeflowBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		cf := readContainerfile(t)
		builds := cf.find(0, "RUN go build ")
		require.Len(t, builds, 1)
		out := regexp.MustCompile(`-o (\S+)`).FindStringSubmatch(builds[0])
		require.NotNil(t, out, "the build names its output")
		dir, err := os.MkdirTemp("", "nudgeflow-image-")
		require.NoError(t, err)
		binaryPath = filepath.Join(dir, "nudgeflow")
		script := strings.Replace(strings.TrimPrefix(builds[0], "RUN "), out[1], binaryPath, 1)
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = localenv.RepoRoot()
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			binaryErr = err
			t.Logf("%s: %s", script, msg)
		}
	})
	require.NoError(t, binaryErr, "building nudgeflow as the Containerfile does")
	return binaryPath
}

// The Containerfile builds a static binary from prefetched modules, installs it
// where the Deployments run it and runs it as a non-root user.
func TestContainerfileBuildsTheImagesBinary(t *testing.T) {
	cf := readContainerfile(t)
	builder := strings.Join(cf.stages[0], "\n")
	require.Contains(t, builder, "ENV GOTOOLCHAIN=local CGO_ENABLED=0", "no toolchain download, a static binary")
	download := strings.Index(builder, "RUN go mod download")
	copyAll := strings.Index(builder, "COPY . .")
	require.True(t, download > 0 && download < copyAll, "modules are downloaded in their own layer, before the sources are copied")
	require.Contains(t, cf.find(0, "RUN go build ")[0], "-mod=readonly", "the build never edits go.mod or go.sum")

	copies := cf.find(1, "COPY --from=builder ")
	var installed bool
	for _, c := range copies {
		if strings.HasSuffix(c, " "+imageBinary) {
			installed = true
		}
	}
	require.True(t, installed, "the runtime stage installs the binary at %s", imageBinary)
	require.Equal(t, []string{`ENTRYPOINT ["` + imageBinary + `"]`}, cf.find(1, "ENTRYPOINT "))
	users := cf.find(1, "USER ")
	require.Len(t, users, 1)
	uid, err := strconv.Atoi(strings.Split(strings.TrimPrefix(users[0], "USER "), ":")[0])
	require.NoError(t, err, "a numeric user, so runAsNonRoot can verify it")
	require.NotZero(t, uid)

	bin := nudgeflowBinary(t)
	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "static: no dynamic loader")
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.Empty(t, libs, "static: no shared library")
	out, err := exec.Command(bin, "--help").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, sub := range []string{"bridge", "worker", "temporal"} {
		require.Contains(t, string(out), sub)
	}
}

// The Containerfile's base images (the defaults of its FROM ARGs) carry a fixed
// tag, never latest, and a full sha256 digest: a rebuild cannot move to another
// image unseen.
func TestContainerfileBaseImagesArePinned(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(localenv.RepoRoot(), "Containerfile"))
	require.NoError(t, err)
	args := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "ARG "); ok {
			if name, value, ok := strings.Cut(rest, "="); ok {
				args[name] = value
			}
		}
	}
	cf := readContainerfile(t)
	pinned := regexp.MustCompile(`^[a-z0-9.-]+(/[a-z0-9._-]+)+:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}@sha256:[0-9a-f]{64}$`)
	for i, stage := range cf.stages {
		from := strings.Fields(stage[0])[1]
		image := from
		if name, ok := strings.CutPrefix(from, "${"); ok {
			image = args[strings.TrimSuffix(name, "}")]
		}
		require.NotEmpty(t, image, "stage %d: FROM %s has a default", i, from)
		require.NotContains(t, image, ":latest", "stage %d", i)
		require.Regexp(t, pinned, image, "stage %d: FROM %s is a tagged image pinned by digest", i, from)
	}
}
