package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"k8s.io/apimachinery/pkg/types"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	cgwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
)

// newChangeGroupCommand sends people's overrides to a ChangeGroup's workflow as
// Temporal updates: the workflow validates them and answers.
func newChangeGroupCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "changegroup",
		Aliases: []string{"chg"},
		Short:   "Show a ChangeGroup's state or override it (release-now, cancel, drop, rebase)",
	}
	verbs := []struct {
		use, short string
		args       int
		update     func(cmd *cobra.Command, args []string) (string, []any)
	}{
		{"release-now NAME", "Stop waiting: release CI with the components that are ready", 1,
			func(*cobra.Command, []string) (string, []any) { return changegroupapi.UpdateReleaseNow, nil }},
		{"cancel NAME", "Cancel the group and close its pull request", 1,
			func(cmd *cobra.Command, _ []string) (string, []any) {
				reason, _ := cmd.Flags().GetString("reason")
				return changegroupapi.UpdateCancel, []any{changegroupapi.CancelRequest{Reason: reason}}
			}},
		{"drop NAME COMPONENT", "Stop waiting for one component", 2,
			func(_ *cobra.Command, args []string) (string, []any) {
				return changegroupapi.UpdateDropComponent, []any{changegroupapi.DropRequest{Component: args[1]}}
			}},
		{"rebase NAME", "Discard manual changes on the PR and let nudgeflow update it again", 1,
			func(*cobra.Command, []string) (string, []any) { return changegroupapi.UpdateRebase, nil }},
	}
	for _, v := range verbs {
		sub := &cobra.Command{Use: v.use, Short: v.short, Args: cobra.ExactArgs(v.args)}
		kf := addKubeFlags(sub, false)
		tf := addTemporalFlags(sub)
		update := v.update
		sub.RunE = func(cmd *cobra.Command, args []string) error {
			id, c, err := resolveGroup(cmd.Context(), kf, tf, args[0])
			if err != nil {
				return err
			}
			defer c.Close()
			name, uargs := update(cmd, args)
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
				WorkflowID: id, UpdateName: name, Args: uargs, WaitForStage: client.WorkflowUpdateStageCompleted,
			})
			if err != nil {
				return fmt.Errorf("%s refused: %w", name, err)
			}
			var result string
			if err := h.Get(ctx, &result); err != nil {
				return fmt.Errorf("%s refused: %w", name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "changegroup/%s: %s\n", args[0], result)
			return nil
		}
		if strings.HasPrefix(v.use, "cancel") {
			sub.Flags().String("reason", "", "why the group is cancelled (shown in its status and on the PR)")
		}
		cmd.AddCommand(sub)
	}
	status := &cobra.Command{Use: "status NAME", Short: "Show the workflow's state: components, PR, phase", Args: cobra.ExactArgs(1)}
	kf := addKubeFlags(status, false)
	tf := addTemporalFlags(status)
	status.RunE = func(cmd *cobra.Command, args []string) error {
		id, c, err := resolveGroup(cmd.Context(), kf, tf, args[0])
		if err != nil {
			return err
		}
		defer c.Close()
		v, err := c.QueryWorkflow(cmd.Context(), id, "", changegroupapi.QueryState)
		if err != nil {
			return fmt.Errorf("querying %s: %w", id, err)
		}
		var st cgwf.State
		if err := v.Get(&st); err != nil {
			return err
		}
		printState(cmd, id, &st)
		return nil
	}
	cmd.AddCommand(status)
	return cmd
}

// resolveGroup reads the CR (for its UID) and dials Temporal.
func resolveGroup(ctx context.Context, kf *kubeFlags, tf *temporalFlags, name string) (string, client.Client, error) {
	kube, ns, err := kf.resolve()
	if err != nil {
		return "", nil, err
	}
	var cg appstudiov1alpha1.ChangeGroup
	if err := kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &cg); err != nil {
		return "", nil, fmt.Errorf("reading ChangeGroup %s/%s: %w", ns, name, err)
	}
	c, err := tf.dial()
	if err != nil {
		return "", nil, err
	}
	return changegroupapi.WorkflowID(ns, name, string(cg.UID)), c, nil
}

func printState(cmd *cobra.Command, id string, st *cgwf.State) {
	out := cmd.OutOrStdout()
	ready := 0
	for _, c := range st.Components {
		if c.State == appstudiov1alpha1.ComponentReady {
			ready++
		}
	}
	fmt.Fprintf(out, "workflow:  %s\nphase:     %s\nready:     %d/%d\n", id, st.Phase, ready, len(st.Components))
	if st.PR.URL != "" {
		fmt.Fprintf(out, "pull:      %s\n", st.PR.URL)
	}
	if st.Message != "" {
		fmt.Fprintf(out, "message:   %s\n", st.Message)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nCOMPONENT\tSTATE\tORIGINAL\tNEW")
	for _, c := range st.Components {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, c.State, short(c.Original), short(c.New))
	}
	_ = tw.Flush()
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}
