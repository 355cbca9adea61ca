package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/nudgeflow/nudgeflow/internal/searchattr"
)

func newTemporalCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "temporal",
		Short: "Prepare a Temporal namespace for nudgeflow",
	}
	cmd.AddCommand(newTemporalSetupCommand())
	return cmd
}

// temporalSetup is what `nudgeflow temporal setup` does.
type temporalSetup struct {
	namespace       string
	createNamespace bool
	retention       time.Duration
	// wait bounds how long a namespace just created may take to accept search
	// attributes (the frontend's namespace cache refreshes every few seconds).
	wait time.Duration
	// timeout bounds the whole setup.
	timeout time.Duration
}

func newTemporalSetupCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Register the search attributes nudgeflow sets (and, with --create-namespace, the namespace)",
		Long: `Registers, with the operator service's AddSearchAttributes, the typed search attributes
nudgeflow's workflows set, so people can filter them in the Temporal Web UI and the
workflows can upsert them. Run it once per namespace before the worker starts; it is
idempotent: attributes that exist with the right type are left alone, and an attribute
that exists with another type is an error that names it.

With --create-namespace a namespace that does not exist is registered first (self-hosted
Temporal; Temporal Cloud namespaces are created in Temporal Cloud).

The connection takes the same flags and variables as the worker and the bridge:
TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TLS, mTLS and TEMPORAL_API_KEY (or TEMPORAL_API_KEY_FILE).`,
		Args: cobra.NoArgs,
	}
	tf := addTemporalFlags(cmd)
	_ = cmd.Flags().MarkHidden("task-queue") // no task queue is involved
	s := &temporalSetup{wait: time.Minute}
	cmd.Flags().BoolVar(&s.createNamespace, "create-namespace", false, "register the namespace when it does not exist (self-hosted Temporal)")
	cmd.Flags().DurationVar(&s.retention, "retention", 72*time.Hour, "retention of closed workflows in a namespace --create-namespace registers")
	cmd.Flags().DurationVar(&s.timeout, "timeout", 3*time.Minute, "give up after this long")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c, err := tf.dial()
		if err != nil {
			return err
		}
		defer c.Close()
		s.namespace = tf.namespace
		ctx, cancel := context.WithTimeout(cmd.Context(), s.timeout)
		defer cancel()
		return s.run(ctx, c, cmd.OutOrStdout())
	}
	return cmd
}

func (s *temporalSetup) run(ctx context.Context, c client.Client, out io.Writer) error {
	if err := s.ensureNamespace(ctx, c, out); err != nil {
		return err
	}
	want := searchattr.All()
	deadline := time.Now().Add(s.wait)
	for {
		err := s.addSearchAttributes(ctx, c, want, out)
		var notFound *serviceerror.NamespaceNotFound
		if errors.As(err, &notFound) && s.createNamespace && time.Now().Before(deadline) {
			// Registered a moment ago: the frontend does not know it yet.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
			continue
		}
		return err
	}
}

func (s *temporalSetup) ensureNamespace(ctx context.Context, c client.Client, out io.Writer) error {
	_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.namespace})
	var notFound *serviceerror.NamespaceNotFound
	switch {
	case err == nil:
		fmt.Fprintf(out, "namespace %s exists\n", s.namespace)
		return nil
	case !errors.As(err, &notFound):
		return fmt.Errorf("reading namespace %s: %w", s.namespace, err)
	case !s.createNamespace:
		return fmt.Errorf("namespace %s does not exist: create it (Temporal Cloud, or the Helm chart's server.config.namespaces) or pass --create-namespace", s.namespace)
	}
	_, err = c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        s.namespace,
		Description:                      "nudgeflow: ChangeGroup and nudge workflows",
		WorkflowExecutionRetentionPeriod: durationpb.New(s.retention),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("registering namespace %s: %w", s.namespace, err)
	}
	fmt.Fprintf(out, "namespace %s registered (retention %s)\n", s.namespace, s.retention)
	return nil
}

func (s *temporalSetup) addSearchAttributes(ctx context.Context, c client.Client, want map[string]enumspb.IndexedValueType, out io.Writer) error {
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: s.namespace})
	if err != nil {
		return fmt.Errorf("listing the search attributes of %s: %w", s.namespace, hintCloud(err, want))
	}
	missing := map[string]enumspb.IndexedValueType{}
	var conflicts []string
	for _, name := range slices.Sorted(maps.Keys(want)) {
		t := want[name]
		got, ok := have.GetCustomAttributes()[name]
		if !ok {
			got, ok = have.GetSystemAttributes()[name]
		}
		switch {
		case !ok:
			missing[name] = t
		case got != t:
			conflicts = append(conflicts, fmt.Sprintf("%s is %s, nudgeflow needs %s", name, typeName(got), typeName(t)))
		default:
			fmt.Fprintf(out, "search attribute %s (%s) exists\n", name, typeName(t))
		}
	}
	if len(conflicts) > 0 {
		return fmt.Errorf("search attributes of namespace %s conflict: %s", s.namespace, strings.Join(conflicts, "; "))
	}
	if len(missing) == 0 {
		fmt.Fprintf(out, "namespace %s is ready for nudgeflow\n", s.namespace)
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: s.namespace, SearchAttributes: missing})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("adding search attributes to %s: %w", s.namespace, hintCloud(err, missing))
	}
	for _, name := range slices.Sorted(maps.Keys(missing)) {
		fmt.Fprintf(out, "search attribute %s (%s) added\n", name, typeName(missing[name]))
	}
	fmt.Fprintf(out, "namespace %s is ready for nudgeflow\n", s.namespace)
	return nil
}

// hintCloud explains a refusal of the operator service, which Temporal Cloud does
// not offer to namespace credentials: the attributes are then added with tcld.
func hintCloud(err error, attrs map[string]enumspb.IndexedValueType) error {
	var denied *serviceerror.PermissionDenied
	var unimplemented *serviceerror.Unimplemented
	if !errors.As(err, &denied) && !errors.As(err, &unimplemented) {
		return err
	}
	var args []string
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		args = append(args, fmt.Sprintf("--sa %q", name+"="+typeName(attrs[name])))
	}
	return fmt.Errorf("%w (on Temporal Cloud add them in the Cloud UI or with `tcld namespace search-attributes add --namespace NS %s`)", err, strings.Join(args, " "))
}

// typeName is the type as the Temporal CLI and tcld spell it (Keyword, Int, ...).
func typeName(t enumspb.IndexedValueType) string {
	s := strings.TrimPrefix(t.String(), "INDEXED_VALUE_TYPE_")
	switch s {
	case "KEYWORD_LIST":
		return "KeywordList"
	case "DATETIME":
		return "Datetime"
	}
	return strings.ToUpper(s[:1]) + strings.ToLower(s[1:])
}
