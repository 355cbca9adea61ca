package nudgeapi

import "github.com/nudgeflow/nudgeflow/contracts/nudgewriteapi"

// ChooseWriterActivity is the registered name of the activity that chooses an
// immediate nudge's writer (activities/writerchoice); never change it (histories
// replay by name).
const ChooseWriterActivity = "ChooseNudgeWriter"

// ErrorTypeInvalidChoice is the type of the error a WriterChoiceRequest without a
// namespace or an edge fails with: a caller's bug, not worth retrying.
const ErrorTypeInvalidChoice = "InvalidRequest"

// Writers, as the Nudge's state, result, NudgeWriter search attribute and Events
// name them (nudgewriteapi's names).
const (
	WriterDirect   = nudgewriteapi.WriterDirect
	WriterRenovate = nudgewriteapi.WriterRenovate
)

// WriterChoiceRequest asks which writer writes one nudge. No secrets.
type WriterChoiceRequest struct {
	Namespace string `json:"namespace"`
	Nudging   string `json:"nudging"`
	Nudged    string `json:"nudged"`
	// HandedBackBy names the ChangeGroup that handed the build back: that group
	// does not hold the nudge (as at the Renovate run's admission).
	HandedBackBy string `json:"handedBackBy,omitempty"`
}

// WriterChoice is the writer chosen for a nudge and why.
type WriterChoice struct {
	// Writer is WriterDirect or WriterRenovate.
	Writer string `json:"writer"`
	// Setting is the setting that chose it: auto, direct or renovate
	// (api/konflux/v1alpha1.ImmediateWriter).
	Setting string `json:"setting"`
	// Reason says where the setting comes from, or why the Renovate path is
	// taken whatever it says (a ChangeGroup holds the edge).
	Reason string `json:"reason"`
	// HeldBy names the active ChangeGroup that holds the edge: the nudge takes the
	// Renovate path, whose run the group holds at admission as before.
	HeldBy string `json:"heldBy,omitempty"`
}
