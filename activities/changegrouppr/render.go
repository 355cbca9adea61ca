package changegrouppr

import (
	"fmt"
	"strings"

	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/pac"
	"github.com/nudgeflow/nudgeflow/internal/prbody"
)

// commitMessage is the message of nudgeflow's commit: the digests it carries and,
// while CI is held, the skip marker.
func commitMessage(req changegroupprapi.SyncRequest, hold bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "chore(deps): update %s for ChangeGroup %s", req.NudgedComponent, req.ChangeGroup)
	if hold {
		b.WriteString(" " + pac.SkipMarker)
	}
	b.WriteString("\n\n")
	for _, r := range req.Rows {
		if r.State == prbody.StateReady && r.New != "" {
			fmt.Fprintf(&b, "- %s: %s@%s\n", r.Component, r.Image, r.New)
		}
	}
	if hold {
		b.WriteString("\nHeld by nudgeflow until every component is ready.\n")
	}
	return b.String()
}

// renderBody is the section of the PR's description nudgeflow manages.
func renderBody(req changegroupprapi.SyncRequest, d desired, hold, rebase, releaseNow, noDraft bool) string {
	in := prbody.Input{ChangeGroup: req.ChangeGroup, ChangeGroupURL: req.ChangeGroupURL, Hold: hold, Rebase: rebase,
		ReleaseNow: releaseNow, NoDraft: noDraft, ReferencesKnown: d.refs != nil, FileMatch: req.FileMatch}
	for _, r := range req.Rows {
		in.Rows = append(in.Rows, prbody.Row{Name: r.Component, Current: r.Current, New: r.New, State: r.State,
			UpdatedAt: r.UpdatedAt, Repositories: d.refs[r.Component]})
	}
	return prbody.Render(in)
}
