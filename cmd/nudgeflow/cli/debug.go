package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/bridge/diagnose"
)

// newDebugCommand answers the runbook's questions at any scale:
// PipelineRuns are read as metadata only, filtered by label on the server and
// paged, never listed in full (bridge/diagnose).
func newDebugCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "debug",
		Short: "Answer an operator's questions (unrouted builds, overdue groups, one build) reading PipelineRuns as metadata only",
	}
	cmd.AddCommand(newDebugUnroutedCommand(), newDebugOverdueCommand(), newDebugBuildCommand(), newDebugUnheldNudgesCommand())
	return cmd
}

// debugOutput is -o and --chunk-size, shared by the debug subcommands.
type debugOutput struct {
	format string
	chunk  int64
}

func addDebugOutputFlags(cmd *cobra.Command) *debugOutput {
	o := &debugOutput{}
	cmd.Flags().StringVarP(&o.format, "output", "o", "", "output format: empty for text, json for machines")
	cmd.Flags().Int64Var(&o.chunk, "chunk-size", diagnose.DefaultChunkSize, "objects per list request (the API server pages with limit/continue)")
	return o
}

// print writes v as JSON with -o json, else calls text.
func (o *debugOutput) print(w io.Writer, v any, text func(io.Writer)) error {
	switch o.format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "":
		text(w)
		return nil
	}
	return fmt.Errorf("output format %q: want json or nothing", o.format)
}

func newDebugUnroutedCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "unrouted",
		Short: "The oldest build PipelineRuns nudgeflow holds and has not released (NudgeflowBuildUnrouted)",
		Long: `Lists the oldest push builds under nudgeflow's build-routing finalizer, by creation:
builds the bridge has not routed (or routed and not released yet). With --include-unheld,
also the push builds neither held nor routed: builds of components without nudge edges,
and builds the hold webhook skipped (it fails open) that no bridge has seen yet.

Build PipelineRuns are read as metadata only (labels, annotations, finalizers,
timestamps), selected by label on the server and paged. Metadata has no completion
time: PACSTATE (Pipelines as Code's state label) and DELETING say which builds ended.`,
		Args: cobra.NoArgs,
	}
	kf := addKubeFlags(cmd, true)
	out := addDebugOutputFlags(cmd)
	var q diagnose.UnroutedQuery
	var since string
	cmd.Flags().BoolVar(&q.IncludeUnheld, "include-unheld", false, "also list push builds neither held nor routed (the hold skipped, or no edges)")
	cmd.Flags().StringVar(&since, "since", "", "only builds created at or after this time (RFC 3339, for example 2026-11-25T12:00:00Z)")
	cmd.Flags().IntVar(&q.Limit, "limit", 10, "how many of the oldest to show")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if since != "" {
			t, err := time.Parse(time.RFC3339, since)
			if err != nil {
				return fmt.Errorf("--since %q: want RFC 3339: %w", since, err)
			}
			q.Since = t
		}
		c, ns, err := kf.resolve()
		if err != nil {
			return err
		}
		q.Namespace, q.ChunkSize = ns, out.chunk
		rep, err := diagnose.UnroutedBuilds(cmd.Context(), c, q)
		if err != nil {
			return err
		}
		now := time.Now()
		return out.print(cmd.OutOrStdout(), rep, func(w io.Writer) {
			fmt.Fprintf(w, "build PipelineRuns read (metadata): %d; held by nudgeflow: %d", rep.Scanned, rep.Held)
			if q.IncludeUnheld {
				fmt.Fprintf(w, "; push builds neither held nor routed: %d", rep.Unheld)
			}
			fmt.Fprintln(w)
			if len(rep.Oldest) == 0 {
				fmt.Fprintln(w, "no unrouted build")
				return
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "\nAGE\tBUILD\tCOMPONENT\tHELD\tPACSTATE\tDELETING\tROUTED\tIS-VERDICT")
			for _, b := range rep.Oldest {
				fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%t\t%s\t%t\t%s\t%s\n", age(now, b.Created), b.Namespace, b.Name, b.Component, b.Held,
					dash(b.PaCState), b.Deleting, dash(b.Routed), dashPtr(b.ISVerdict))
			}
			_ = tw.Flush()
			fmt.Fprintf(w, "\nwhy one waits: nudgeflow debug build %s/%s\n", rep.Oldest[0].Namespace, rep.Oldest[0].Name)
		})
	}
	return cmd
}

func newDebugOverdueCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "overdue",
		Short: "ChangeGroups still collecting past their timeout, most overdue first (NudgeflowChangeGroupOverdue)",
		Long: `Lists the ChangeGroups that are not final, not Ready, and whose creation plus spec.timeout
has passed: the ones nudgeflow_changegroup_oldest_overdue_seconds measures (the alert fires
at 15 minutes). ChangeGroups are read in full (their status holds phase and members), paged.`,
		Args: cobra.NoArgs,
	}
	kf := addKubeFlags(cmd, true)
	out := addDebugOutputFlags(cmd)
	limit := cmd.Flags().Int("limit", 10, "how many of the most overdue to show (0: all)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c, ns, err := kf.resolve()
		if err != nil {
			return err
		}
		rep, err := diagnose.OverdueGroups(cmd.Context(), c, ns, out.chunk, time.Now())
		if err != nil {
			return err
		}
		if *limit > 0 && len(rep.Overdue) > *limit {
			rep.Overdue = rep.Overdue[:*limit]
		}
		return out.print(cmd.OutOrStdout(), rep, func(w io.Writer) {
			fmt.Fprintf(w, "ChangeGroups read: %d; open: %d; past their timeout: %d shown\n", rep.Scanned, rep.Open, len(rep.Overdue))
			if len(rep.Overdue) == 0 {
				return
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "\nOVERDUE\tCHANGEGROUP\tPHASE\tTIMEOUT\tREADY\tNUDGED\tWAITING FOR\tWORKFLOW")
			for _, g := range rep.Overdue {
				phase := dash(g.Phase)
				if g.Deleting {
					phase += ",deleting"
				}
				fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Overdue.Round(time.Second), g.Namespace, g.Name, phase, g.Timeout,
					dash(g.Ready), g.Nudged, dash(strings.Join(g.Waiting, ",")), dash(g.WorkflowID))
			}
			_ = tw.Flush()
			g := rep.Overdue[0]
			fmt.Fprintf(w, "\nthe workflow's own view: nudgeflow changegroup status %s -n %s\n", g.Name, g.Namespace)
		})
	}
	return cmd
}

func newDebugBuildCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "build [NAMESPACE/]NAME",
		Short: "Why a build waits: per nudge edge, the ChangeGroup, the peer's verdict, a held or queued run",
		Long: `Explains one build PipelineRun: whether nudgeflow holds or routed it and, for each nudge
edge of its component, who runs the edge (--nudging-peers, as the bridge was started), the
ChangeGroup holding it and the members that group still waits for, integration-service's
verdict, and the nudge PipelineRuns made from the build (held at admission, queued behind
another run on their branch, pended by Kueue). PipelineRuns are read as metadata only.`,
		Args: cobra.ExactArgs(1),
	}
	kf := addKubeFlags(cmd, false)
	out := addDebugOutputFlags(cmd)
	peersFlag := cmd.Flags().String("nudging-peers", builds.PeersAuto, "the Konflux services nudging beside nudgeflow, as the bridge's --nudging-peers: auto, none, or build-service,integration-service")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c, ns, err := kf.resolve()
		if err != nil {
			return err
		}
		name := args[0]
		if before, after, ok := strings.Cut(name, "/"); ok {
			if kf.namespace != "" && kf.namespace != before {
				return fmt.Errorf("%s names namespace %s, -n says %s", name, before, kf.namespace)
			}
			ns, name = before, after
		}
		peers, auto, err := builds.ParsePeers(*peersFlag)
		if err != nil {
			return err
		}
		if auto {
			if peers, err = builds.DetectPeers(c.RESTMapper()); err != nil {
				return err
			}
		}
		rep, err := diagnose.ExplainBuild(cmd.Context(), c, ns, name, peers, out.chunk, time.Now())
		if err != nil {
			return err
		}
		return out.print(cmd.OutOrStdout(), rep, func(w io.Writer) { printBuildReport(w, rep, peers) })
	}
	return cmd
}

func newDebugUnheldNudgesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "unheld-nudges",
		Short: "Other services' nudge PipelineRuns nudgeflow's interception did not hold, and the open groups they went around",
		Long: `Lists build-service's and integration-service's nudge PipelineRuns that nudgeflow neither
held nor cancelled (the interception webhook fails open), oldest first, and per target the
open ChangeGroup that collects the edge now: that target got a pull request outside its
group's. Nudge PipelineRuns are read as metadata only, paged.`,
		Args: cobra.NoArgs,
	}
	kf := addKubeFlags(cmd, true)
	out := addDebugOutputFlags(cmd)
	since := cmd.Flags().String("since", "", "only runs created at or after this time (RFC 3339); required")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		t, err := time.Parse(time.RFC3339, *since)
		if err != nil {
			return fmt.Errorf("--since %q: want RFC 3339 (the time the webhook failed open from): %w", *since, err)
		}
		c, ns, err := kf.resolve()
		if err != nil {
			return err
		}
		rep, err := diagnose.UnheldNudges(cmd.Context(), c, ns, t, out.chunk)
		if err != nil {
			return err
		}
		return out.print(cmd.OutOrStdout(), rep, func(w io.Writer) {
			fmt.Fprintf(w, "nudge PipelineRuns read (metadata): %d; not held by nudgeflow since %s: %d\n", rep.Scanned, *since, len(rep.Unheld))
			if len(rep.Unheld) == 0 {
				return
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "\nCREATED\tRUN\tFROM\tTARGETS\tOUTSIDE GROUP")
			for _, n := range rep.Unheld {
				fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\n", n.Created.UTC().Format(time.RFC3339), n.Namespace, n.Name, dash(n.From),
					strings.Join(n.Targets, ","), dash(strings.Join(n.OutsideGroups, ",")))
			}
			_ = tw.Flush()
		})
	}
	return cmd
}

func printBuildReport(w io.Writer, rep *diagnose.BuildReport, peers builds.Peers) {
	fmt.Fprintf(w, "build:      %s/%s\ncomponent:  %s\ncreated:    %s\n", rep.Namespace, rep.Name, dash(rep.Component), rep.Created.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "held:       %t\nrouted:     %s\n", rep.Held, dash(rep.Routed))
	if rep.PaCState != "" {
		fmt.Fprintf(w, "pac state:  %s\n", rep.PaCState)
	}
	if rep.Deleting {
		fmt.Fprintln(w, "deleting:   true (the finalizer keeps it)")
	}
	fmt.Fprintf(w, "is verdict: %s\npeers:      %s\n\n%s\n", dashPtr(rep.ISVerdict), peers, rep.Summary)
	for _, e := range rep.Edges {
		fmt.Fprintf(w, "\nedge %s (%s, from %s, run by %s)\n", e.Edge, e.Mode, e.Source, e.Runner)
		fmt.Fprintf(w, "  state:       %s\n", e.State)
		if e.WaitingFor != "" {
			fmt.Fprintf(w, "  waiting for: %s\n", e.WaitingFor)
		}
		if e.Group != nil {
			fmt.Fprintf(w, "  changegroup: %s (phase %s, ready %s, pull request %s)\n", e.Group.Name, dash(e.Group.Phase), dash(e.Group.Ready), dash(e.Group.PR))
		}
		if e.WorkflowID != "" {
			fmt.Fprintf(w, "  workflow:    %s\n", e.WorkflowID)
		}
		if len(e.Runs) > 0 {
			fmt.Fprintf(w, "  nudge runs:  %s\n", strings.Join(e.Runs, ", "))
		}
	}
}

func age(now, t time.Time) string { return now.Sub(t).Round(time.Second).String() }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func dashPtr(s *string) string {
	if s == nil {
		return "-"
	}
	return dash(*s)
}
