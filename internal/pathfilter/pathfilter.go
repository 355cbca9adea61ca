// Package pathfilter evaluates a PipelineRun's
// `pipelinesascode.tekton.dev/on-cel-expression` the way Pipelines as Code does
// (pkg/matcher/cel.go): github.com/google/cel-go with PaC's variables (event,
// event_type, event_title, target_branch, source_branch, target_url, source_url,
// body, headers, files) and the `"glob".pathChanged()` member function over
// github.com/gobwas/glob. ADR 29's monorepo synthetic commit asks, for each file an
// originating PR changed, whether the target component's pull-request pipeline
// would run for that change: Match evaluates the expression once per file, with
// that file as the event's only changed file.
//
// nudgeflow has no webhook payload: an expression that reads `body` or `headers`
// cannot be evaluated (ErrUnevaluable), nor can one that fails to parse, check or
// evaluate, or does not yield a bool. Pure: no I/O.
package pathfilter

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gobwas/glob"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/decls"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// errUnevaluable wraps every reason an expression cannot be evaluated.
var errUnevaluable = errors.New("the on-cel-expression cannot be evaluated")

// Event is the pull-request event the expression is evaluated for.
type Event struct {
	// Event is PaC's trigger target: "pull_request" or "push".
	Event string
	// EventType is the forge's event header: GitHub "pull_request", GitLab "Merge Request".
	EventType    string
	Title        string
	TargetBranch string
	SourceBranch string
	TargetURL    string
	SourceURL    string
}

// Change statuses, as GitHub's pull request files API names them (PaC's categories).
const (
	added    = "added"
	removed  = "removed"
	modified = "modified"
	renamed  = "renamed"
)

// File is one changed file of a pull request.
type File struct {
	Path string
	// Status is Added, Removed, Modified or Renamed (anything else counts in files.all only).
	Status string
}

// Filter is a parsed and checked expression.
type Filter struct {
	expr string
	prg  cel.Program
	// files is the file list pathChanged reads during the current evaluation.
	files *[]string
}

// PaC's standard variables (pkg/matcher/cel.go).
func variables() cel.EnvOption {
	return cel.VariableDecls(
		decls.NewVariable("event", types.StringType),
		decls.NewVariable("event_type", types.StringType),
		decls.NewVariable("headers", types.NewMapType(types.StringType, types.DynType)),
		decls.NewVariable("body", types.NewMapType(types.StringType, types.DynType)),
		decls.NewVariable("event_title", types.StringType),
		decls.NewVariable("target_branch", types.StringType),
		decls.NewVariable("source_branch", types.StringType),
		decls.NewVariable("target_url", types.StringType),
		decls.NewVariable("source_url", types.StringType),
		decls.NewVariable("files", types.NewMapType(types.StringType, types.DynType)),
	)
}

// Compile parses and checks expr in PaC's environment. It fails (wrapping
// ErrUnevaluable) on a parse or check error and when the expression reads `body` or
// `headers`, which nudgeflow does not have.
func Compile(expr string) (*Filter, error) {
	f := &Filter{expr: expr, files: new([]string)}
	env, err := cel.NewEnv(variables(), cel.Function("pathChanged",
		cel.MemberOverload("pathChanged", []*cel.Type{cel.StringType}, cel.BoolType,
			cel.UnaryBinding(f.pathChanged))))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUnevaluable, err)
	}
	parsed, iss := env.Parse(expr)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("%w: failed to parse expression %q: %v", errUnevaluable, expr, iss.Err())
	}
	checked, iss := env.Check(parsed)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("%w: expression %q check failed: %v", errUnevaluable, expr, iss.Err())
	}
	if used := payloadVariables(checked.NativeRep()); len(used) > 0 {
		return nil, fmt.Errorf("%w: expression %q reads %v of the webhook payload, which nudgeflow does not have", errUnevaluable, expr, used)
	}
	if f.prg, err = env.Program(checked); err != nil {
		return nil, fmt.Errorf("%w: expression %q failed to create a Program: %v", errUnevaluable, expr, err)
	}
	return f, nil
}

// payloadVariables are the variables of the webhook payload the expression reads.
func payloadVariables(a *ast.AST) []string {
	var used []string
	ast.PreOrderVisit(a.Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() == ast.IdentKind {
			if n := e.AsIdent(); (n == "body" || n == "headers") && !slices.Contains(used, n) {
				used = append(used, n)
			}
		}
	}))
	slices.Sort(used)
	return used
}

// pathChanged is PaC's: true when any changed file matches the glob (compiled with
// no separators, so `*` crosses `/`); false for no files. PaC panics on an invalid
// glob (glob.MustCompile); here it is an evaluation error.
func (f *Filter) pathChanged(val ref.Val) ref.Val {
	pattern, ok := val.Value().(string)
	if !ok {
		return types.False
	}
	g, err := glob.Compile(pattern)
	if err != nil {
		return types.NewErr("invalid glob %q: %v", pattern, err)
	}
	for _, p := range *f.files {
		if g.Match(p) {
			return types.True
		}
	}
	return types.False
}

// Eval evaluates the expression for ev with files as the event's changed files.
func (f *Filter) Eval(ev Event, files []File) (bool, error) {
	all := []string{}
	byStatus := map[string][]string{added: {}, removed: {}, modified: {}, renamed: {}}
	for _, file := range files {
		all = append(all, file.Path)
		if _, ok := byStatus[file.Status]; ok {
			byStatus[file.Status] = append(byStatus[file.Status], file.Path)
		}
	}
	*f.files = all
	data := map[string]any{
		"event": ev.Event, "event_type": ev.EventType, "event_title": ev.Title,
		"target_branch": ev.TargetBranch, "source_branch": ev.SourceBranch,
		"target_url": ev.TargetURL, "source_url": ev.SourceURL,
		"body": map[string]any{}, "headers": map[string]string{},
		"files": map[string]any{"all": all, "added": byStatus[added], "deleted": byStatus[removed],
			"modified": byStatus[modified], "renamed": byStatus[renamed]},
	}
	out, _, err := f.prg.Eval(data)
	if err != nil {
		return false, fmt.Errorf("%w: expression %q failed to evaluate: %v", errUnevaluable, f.expr, err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("%w: expression %q yields %v, not a bool", errUnevaluable, f.expr, out.Type())
	}
	return b, nil
}

// Match returns the files for which the expression is true when each is the
// event's only changed file (in the order given). A Filter is not safe for
// concurrent use.
func (f *Filter) Match(ev Event, files []File) ([]File, error) {
	var out []File
	for _, file := range files {
		ok, err := f.Eval(ev, []File{file})
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, file)
		}
	}
	return out, nil
}
