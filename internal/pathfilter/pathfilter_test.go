package pathfilter

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

var prEvent = Event{Event: "pull_request", EventType: "pull_request", Title: "change", TargetBranch: "main",
	SourceBranch: "my-feature@nudgeflow-bundle", TargetURL: "https://github.com/org/repo", SourceURL: "https://github.com/org/repo"}

func TestEval(t *testing.T) {
	for _, tc := range []struct {
		name  string
		expr  string
		files []File
		want  bool
	}{
		// PaC's own tests (pkg/matcher/annotation_matcher_test.go).
		{"PaC: match path by glob", `".tekton/*yaml".pathChanged()`, []File{{".tekton/pull_request.yaml", added}}, true},
		{"PaC: no match path by glob", `".tekton/*yaml".pathChanged()`, []File{{".tekton/foo.json", added}}, false},
		{"PaC: match by direct path", `".tekton/pull_request.yaml".pathChanged()`, []File{{".tekton/pull_request.yaml", added}}, true},
		// PaC's documentation (docs/content/docs/guides/event-matching/cel-expressions.md).
		{"docs: docs/*.md", `event == "pull_request" && "docs/*.md".pathChanged()`, []File{{"docs/a.md", modified}}, true},
		{"docs: docs/*.md on push", `event == "push" && "docs/*.md".pathChanged()`, []File{{"docs/a.md", modified}}, false},
		{"docs: files.all tmp/", `files.all.exists(x, x.matches('tmp/'))`, []File{{"tmp/x", removed}}, true},
		{"docs: files.added src|pkg", `files.added.exists(x, x.matches('src/|pkg/'))`, []File{{"pkg/a.go", added}}, true},
		{"docs: files.added, modified file", `files.added.exists(x, x.matches('src/|pkg/'))`, []File{{"pkg/a.go", modified}}, false},
		{"docs: files.modified test.go", `files.modified.exists(x, x.matches('test.go'))`, []File{{"a/test.go", modified}}, true},
		{"docs: exclude docs", `event == "pull_request" && target_branch == "main" && !files.all.all(x, x.matches('^docs/') || x.matches('\\.md$') || x.matches('(\\.gitignore|OWNERS|PROJECT|LICENSE)$'))`,
			[]File{{"README.md", modified}}, false},
		{"docs: exclude docs, code", `event == "pull_request" && target_branch == "main" && !files.all.all(x, x.matches('^docs/') || x.matches('\\.md$') || x.matches('(\\.gitignore|OWNERS|PROJECT|LICENSE)$'))`,
			[]File{{"main.go", modified}}, true},
		{"docs: source_branch regex", `event == "pull_request" && source_branch.matches(".*feat/.*")`, []File{{"a", modified}}, false},
		{"docs: title", `event == "pull_request" && event_title.startsWith("[DOWNSTREAM]")`, []File{{"a", modified}}, false},
		// ADR 29's default and Konflux's generated expressions.
		{"ADR 29: *", `"*".pathChanged()`, []File{{"deep/dir/file.go", modified}}, true},
		{"Konflux default", `event == "pull_request" && target_branch == "main"`, []File{{"x", modified}}, true},
		{"Konflux path filter", `event == "pull_request" && target_branch == "main" && ("bundle/***".pathChanged() || ".tekton/bundle-pull-request.yaml".pathChanged())`,
			[]File{{"bundle/manifests/csv.yaml", modified}}, true},
		{"Konflux path filter outside", `event == "pull_request" && target_branch == "main" && ("bundle/***".pathChanged() || ".tekton/bundle-pull-request.yaml".pathChanged())`,
			[]File{{"cmd/main.go", modified}}, false},
		// gobwas/glob without separators: * crosses "/".
		{"glob * crosses /", `"docs/*.md".pathChanged()`, []File{{"docs/a/b/c.md", modified}}, true},
		{"glob alternatives", `"{api,cmd}/**".pathChanged()`, []File{{"cmd/x/main.go", modified}}, true},
		{"glob ?", `"a?.go".pathChanged()`, []File{{"ab.go", modified}}, true},
		{"glob classes", `"[!b]*.go".pathChanged()`, []File{{"b.go", modified}}, false},
		{"no files: pathChanged false", `"*".pathChanged()`, nil, false},
		{"nudge loop guard", `event == "pull_request" && !("manifests/base/params-latest.env".pathChanged())`, []File{{"manifests/base/params-latest.env", modified}}, false},
		{"renamed", `files.renamed.size() == 1`, []File{{"new.go", renamed}}, true},
		{"deleted", `files.deleted.exists(x, x == "gone.go")`, []File{{"gone.go", removed}}, true},
		{"url", `target_url == source_url && event_type == "pull_request"`, []File{{"a", modified}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Compile(tc.expr)
			require.NoError(t, err)
			got, err := f.Eval(prEvent, tc.files)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestUnevaluable(t *testing.T) {
	for _, tc := range []struct{ name, expr, want string }{
		{"parse error", `event == `, "failed to parse"},
		{"unknown variable", `labels == "x"`, "check failed"},
		{"not a bool at check", `event`, "not a bool"},
		{"body", `event == "pull_request" && !body.pull_request.draft`, "reads [body]"},
		{"headers", `headers['x-github-event'] == "pull_request"`, "reads [headers]"},
		{"invalid glob", `"[".pathChanged()`, "invalid glob"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Compile(tc.expr)
			if err == nil {
				_, err = f.Eval(prEvent, []File{{"a", modified}})
			}
			require.Error(t, err)
			require.True(t, errors.Is(err, errUnevaluable))
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestMatchEachFile(t *testing.T) {
	f, err := Compile(`event == "pull_request" && "bundle/***".pathChanged()`)
	require.NoError(t, err)
	got, err := f.Match(prEvent, []File{{"bundle/csv.yaml", modified}, {"main.go", modified}, {"bundle/new.yaml", added}})
	require.NoError(t, err)
	require.Equal(t, []File{{"bundle/csv.yaml", modified}, {"bundle/new.yaml", added}}, got)

	// An expression that holds whatever the files (no path filter) matches each.
	f, err = Compile(`event == "pull_request"`)
	require.NoError(t, err)
	got, err = f.Match(prEvent, []File{{"a", modified}, {"b", removed}})
	require.NoError(t, err)
	require.Len(t, got, 2)
}

func FuzzCompile(f *testing.F) {
	f.Add(`"*".pathChanged()`)
	f.Add(`files.all.exists(x, x.matches('['))`)
	f.Fuzz(func(t *testing.T, expr string) {
		flt, err := Compile(expr)
		if err != nil {
			return
		}
		_, _ = flt.Eval(prEvent, []File{{"a/b", modified}})
	})
}
