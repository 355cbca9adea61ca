package changegroupcontroller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// closedWorkflows holds the UIDs of the ChangeGroups whose workflow this process
// found closed (SignalWithStart answered ErrEnded) while their CR still said they
// were not final. Such a group never moves again: its workflow, which alone writes
// its status, has ended (terminated or timed out by hand, or a final status write it
// never made), and the ID is never reused. Its CR keeps intercepting the nudges of
// its edges, which the bridge then hands back one by one (Deliver, Took), and its
// finalizer stays until someone deletes it. metrics.ChangeGroupWorkflowClosed counts
// them (bridge.ReadBacklog, which counts only groups its cache shows not final, so
// a mark made from a stale copy of a group that has just ended counts for
// nothing); the Reconciler forgets a group when it next reconciles it final or
// deleted (status writes do not reconcile: a leftover mark is a UID, and counts
// for nothing). Process-global: the backlog gauges are measured for one bridge per process.
var closedWorkflows sync.Map // types.UID -> struct{}

// markClosed records that the workflow of the group uid has closed; it reports
// whether this is news.
func markClosed(uid types.UID) bool {
	_, known := closedWorkflows.LoadOrStore(uid, struct{}{})
	return !known
}

// forgetClosed drops uid: its CR is final or gone.
func forgetClosed(uid types.UID) { closedWorkflows.Delete(uid) }

// WorkflowClosed reports whether the bridge found the workflow of the group uid
// closed while its CR was not final.
func WorkflowClosed(uid types.UID) bool {
	_, ok := closedWorkflows.Load(uid)
	return ok
}
