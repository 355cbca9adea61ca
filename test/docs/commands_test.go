// Package docs_test checks that the docs tell the truth about how to build and
// test: every `go test`, `go build`, `go run` and `make` command line in README.md,
// docs/*.md, test/README.md and deploy/README.md names packages and make targets
// that exist where the line runs. It never runs the commands (test/devenv runs the
// walkthrough's blocks); it resolves them: `go list` of the packages in the module
// of the line's folder, and the make database of the folder's Makefile.
//
// Where a line runs: every page's commands run from the repository root, unless the
// line (an inline code span) or an earlier line of its block (a fenced block, one
// shell session) changes folder with `cd`.
package docs_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// pages are the documents whose command lines must resolve, relative to the
// repository root; docs/*.md is globbed.
var pages = []string{"README.md", "docs/*.md", "test/README.md", "deploy/README.md", "deploy/UPGRADING.md"}

// A command is one go or make invocation found in a page.
type command struct {
	where string   // page:line
	dir   string   // the folder it runs in, relative to the repository root
	args  []string // the words, environment assignments dropped: "go", "test", ...
}

func (c command) String() string {
	return fmt.Sprintf("%s: (in %s) %s", c.where, c.dir, strings.Join(c.args, " "))
}

func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// TestDocCommandsResolve is the check: each command line the docs give names
// packages and targets that exist where it runs.
func TestDocCommandsResolve(t *testing.T) {
	root := repoRoot(t)
	var cmds []command
	for _, pattern := range pages {
		files, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil || len(files) == 0 {
			t.Fatalf("no page matches %s (%v)", pattern, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, f)
			cmds = append(cmds, extract(rel, string(b))...)
		}
	}
	// A floor, so an extractor that silently finds nothing fails: the pages give
	// make run/test/bench and the go test lines of test/README.md and the walkthrough.
	if len(cmds) < 20 {
		t.Fatalf("found only %d command lines in the docs; the extractor lost them:\n%s", len(cmds), list(cmds))
	}
	if problems := resolve(t, root, cmds); len(problems) > 0 {
		t.Fatalf("%d command lines in the docs do not resolve where they run:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	t.Logf("%d command lines resolve:\n%s", len(cmds), list(cmds))
}

// TestDocCommandsCatchPlantedLines plants broken lines in a page and requires the
// check to name each one, so TestDocCommandsResolve passing means something.
func TestDocCommandsCatchPlantedLines(t *testing.T) {
	root := repoRoot(t)
	page := strings.Join([]string{
		"From the root (`go test ./test/devenv/` runs the walkthrough).", // test/ is its own module
		"`make no-such-target` and `make build` and `make test`.",
		"```sh",
		"cd test",
		"go test -count=1 -run 'TestX' ./nosuchpkg/",
		"go test -count=1 ./changegroup/",
		"```",
		"`cd test && go build ./cmd/nudgeflow` builds nothing: the binary is the root module's.",
		"`go run ./internal/nudgegraph` is not a command; `go build` names the tool.",
		"`go test -count=1 -run TestWalkthrough ./test/devenv/`",
		"```sh",
		"go build -o /tmp/x ./cmd/nudgeflow",
		"GITEA=$(hack/tools.sh path gitea) go test -count=1 -v -run 'A|B' ./internal/digestref/",
		"make build build-dev \\",
		"  BENCH_FLAGS=--quick",
		"```",
	}, "\n")
	cmds := extract("planted.md", page)
	problems := resolve(t, root, cmds)
	want := []string{
		"planted.md:1: (in .) go test ./test/devenv/",
		"planted.md:2: (in .) make no-such-target",
		"planted.md:5: (in test) go test -count=1 -run TestX ./nosuchpkg/",
		"planted.md:8: (in test) go build ./cmd/nudgeflow",
		"planted.md:9: (in .) go run ./internal/nudgegraph",
		"planted.md:10: (in .) go test -count=1 -run TestWalkthrough ./test/devenv/",
	}
	var got []string
	for _, p := range problems {
		got = append(got, strings.SplitN(p, " — ", 2)[0])
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("planted lines: the check reported\n%s\nwant\n%s\nfrom the lines\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"), list(cmds))
	}
	if len(cmds) != 12 {
		t.Fatalf("found %d command lines in the planted page, want 12:\n%s", len(cmds), list(cmds))
	}
}

func list(cmds []command) string {
	var b strings.Builder
	for _, c := range cmds {
		b.WriteString(c.String() + "\n")
	}
	return b.String()
}

var (
	fenceRE = regexp.MustCompile("(?m)^[ \t]*```")
	spanRE  = regexp.MustCompile("`([^`]+)`")
)

// extract finds the go and make command lines of a page: every line of a fenced
// block (one shell session: a `cd` holds for the lines after it) and every inline
// code span (a `cd` holds within the span) but one that only names the tool.
func extract(page, text string) []command {
	var cmds []command
	lines := strings.Split(text, "\n")
	var prose []string // the page with fenced blocks blanked, for the spans
	for i := 0; i < len(lines); i++ {
		if !fenceRE.MatchString(lines[i]) {
			prose = append(prose, lines[i])
			continue
		}
		prose = append(prose, "")
		dir := "."
		for i++; i < len(lines) && !fenceRE.MatchString(lines[i]); i++ {
			prose = append(prose, "")
			start := i
			line := lines[i]
			for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
				i++
				prose = append(prose, "")
				line = strings.TrimSuffix(line, "\\") + " " + lines[i]
			}
			var found []command
			found, dir = commandsIn(fmt.Sprintf("%s:%d", page, start+1), dir, line)
			cmds = append(cmds, found...)
		}
		prose = append(prose, "")
	}
	// Spans may wrap across lines; keep the line each starts on.
	joined := strings.Join(prose, "\n")
	for _, m := range spanRE.FindAllStringSubmatchIndex(joined, -1) {
		at := strings.Count(joined[:m[0]], "\n") + 1
		found, _ := commandsIn(fmt.Sprintf("%s:%d", page, at), ".", strings.ReplaceAll(joined[m[2]:m[3]], "\n", " "))
		for _, c := range found {
			// A span of just `go build` or `go test` names the tool in prose
			// ("measured with `go build`"); a command line says what it builds.
			if c.args[0] == "go" && len(c.args) == 2 {
				continue
			}
			cmds = append(cmds, c)
		}
	}
	sort.SliceStable(cmds, func(i, j int) bool { return lineOf(cmds[i].where) < lineOf(cmds[j].where) })
	return cmds
}

func lineOf(where string) int {
	var n int
	_, _ = fmt.Sscanf(where[strings.LastIndex(where, ":")+1:], "%d", &n)
	return n
}

// commandsIn splits one shell line into its commands (&&, ||, ;, |) and returns the
// go and make ones, following `cd` from dir; it returns the folder the line ends in.
func commandsIn(where, dir, line string) ([]command, string) {
	var cmds []command
	for _, words := range split(words(line)) {
		for len(words) > 0 && isAssignment(words[0]) {
			words = words[1:]
		}
		if len(words) == 0 {
			continue
		}
		switch {
		case words[0] == "cd" && len(words) == 2:
			dir = filepath.Clean(filepath.Join(dir, words[1]))
		case words[0] == "make" && len(words) > 1:
			cmds = append(cmds, command{where: where, dir: dir, args: words})
		case words[0] == "go" && len(words) > 1 && (words[1] == "test" || words[1] == "build" || words[1] == "run"):
			cmds = append(cmds, command{where: where, dir: dir, args: words})
		}
	}
	return cmds, dir
}

func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	return ok && regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString(name)
}

// words splits a shell line into words: quotes and $(...) stay inside one word
// (their quotes removed), a # starting a word ends the line, and the operators
// && || ; | are words of their own.
func words(line string) []string {
	var out []string
	var cur strings.Builder
	in := false // a word is under way
	flush := func() {
		if in {
			out = append(out, cur.String())
		}
		cur.Reset()
		in = false
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !in:
			flush()
			return out
		case c == '\'' || c == '"':
			in = true
			j := strings.IndexByte(line[i+1:], c)
			if j < 0 {
				j = len(line) - i - 1
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
		case c == '$' && i+1 < len(line) && line[i+1] == '(':
			in = true
			depth := 0
			for ; i < len(line); i++ {
				cur.WriteByte(line[i])
				if line[i] == '(' {
					depth++
				} else if line[i] == ')' {
					if depth--; depth == 0 {
						break
					}
				}
			}
		case c == '&' || c == '|' || c == ';':
			flush()
			op := string(c)
			if i+1 < len(line) && line[i+1] == c && c != ';' {
				op += string(c)
				i++
			}
			out = append(out, op)
		default:
			in = true
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

// split cuts words into commands at the shell's operators.
func split(ws []string) [][]string {
	var cmds [][]string
	var cur []string
	for _, w := range ws {
		switch w {
		case "&&", "||", ";", "|", "&":
			cmds = append(cmds, cur)
			cur = nil
		default:
			cur = append(cur, w)
		}
	}
	return append(cmds, cur)
}

// goValueFlags are the go command's flags that take the next word as their value.
var goValueFlags = map[string]bool{
	"-run": true, "-bench": true, "-benchtime": true, "-cpu": true, "-o": true, "-timeout": true,
	"-count": true, "-tags": true, "-ldflags": true, "-gcflags": true, "-p": true, "-parallel": true,
	"-coverprofile": true, "-cpuprofile": true, "-memprofile": true, "-exec": true, "-skip": true,
	"-shuffle": true, "-coverpkg": true, "-covermode": true, "-mod": true, "-modfile": true,
	"-blockprofile": true, "-mutexprofile": true, "-outputdir": true, "-trace": true, "-C": true,
}

// packagesOf is what a go command line builds: its package arguments ("." when it
// names none), and for go run only the first (the rest are the program's).
func packagesOf(args []string) []string {
	var pkgs []string
	for i := 2; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			if a == "-args" {
				break
			}
			if goValueFlags[a] {
				i++
			}
			continue
		}
		pkgs = append(pkgs, a)
		if args[1] == "run" {
			break
		}
	}
	if len(pkgs) == 0 {
		pkgs = []string{"."}
	}
	return pkgs
}

// resolve checks every command where it runs and returns one line per command
// that does not resolve: the command, " — ", and why.
func resolve(t *testing.T, root string, cmds []command) []string {
	t.Helper()
	var problems []string
	targets := map[string]map[string]bool{} // folder -> its Makefile's targets
	for _, c := range cmds {
		dir := filepath.Join(root, c.dir)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			problems = append(problems, fmt.Sprintf("%s — no folder %s", c, c.dir))
			continue
		}
		if c.args[0] == "make" {
			if targets[c.dir] == nil {
				targets[c.dir] = makeTargets(dir)
			}
			for _, a := range c.args[1:] {
				if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
					continue
				}
				if !targets[c.dir][a] {
					problems = append(problems, fmt.Sprintf("%s — no make target %q in %s", c, a, filepath.Join(c.dir, "Makefile")))
					break
				}
			}
			continue
		}
		if why := goList(dir, c.args[1], packagesOf(c.args)); why != "" {
			problems = append(problems, fmt.Sprintf("%s — %s", c, why))
		}
	}
	return problems
}

// makeTargets reads the make database of dir's Makefile without running a recipe:
// -p prints it, -q runs nothing, and the goal that does not exist stops make there.
func makeTargets(dir string) map[string]bool {
	cmd := exec.Command("make", "-pRrq", "__docs_no_such_goal__")
	cmd.Dir = dir
	out, _ := cmd.Output() // exits 2: the goal does not exist
	targets := map[string]bool{}
	notTarget := false
	for _, l := range strings.Split(string(out), "\n") {
		if l == "# Not a target:" {
			notTarget = true
			continue
		}
		if name, _, ok := strings.Cut(l, ":"); ok && !notTarget && name != "" && !strings.ContainsAny(name, " \t#$%=") && !strings.HasPrefix(l[len(name):], ":=") {
			targets[name] = true
		}
		notTarget = false
	}
	return targets
}

// goList asks the go command, in dir, whether patterns name packages of dir's
// module (a go run, a main package); it returns why not, or "".
func goList(dir, verb string, patterns []string) string {
	args := append([]string{"list", "-e", "-f", "{{.ImportPath}}\t{{.Name}}\t{{if .Error}}{{.Error}}{{end}}"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Sprintf("go list %s: %v: %s", strings.Join(patterns, " "), err, strings.TrimSpace(stderr.String()))
	}
	if w := strings.TrimSpace(stderr.String()); strings.Contains(w, "matched no packages") {
		return w
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) == 0 || lines[0] == "" {
		return "no packages"
	}
	for _, l := range lines {
		f := strings.SplitN(l, "\t", 3)
		if len(f) == 3 && f[2] != "" {
			return strings.ReplaceAll(f[2], "\n", " ")
		}
		if len(f) >= 2 && f[1] == "" {
			return "no Go files in " + f[0]
		}
		if verb == "run" && len(f) >= 2 && f[1] != "main" {
			return fmt.Sprintf("%s is package %s, not a command", f[0], f[1])
		}
	}
	return ""
}
