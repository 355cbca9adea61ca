package renovaterun

// After a run that exited 0 the forge decides whether it delivered its build
// (activities/renovate CheckDelivery asks it); these are its answer.

// Where a delivered digest was found.
const (
	DeliveredOnBase        = "base-branch"
	DeliveredInPullRequest = "pull-request"
	// DeliveredByRunLog: only stand-in runs go to the host (Activities.StandInForge);
	// the run's log said so.
	DeliveredByRunLog = "run-log"
	// DeliveredNotReferenced: no file Renovate edits references the image on
	// the base branch and no pull request of the branch exists: nothing to nudge.
	DeliveredNotReferenced = "not-referenced"
)

// ReasonNotDelivered is RunStatus.Reason of a run that exited 0 (and whose log
// named no failure) but whose digest the forge shows nowhere; ReasonDeliveryUnknown
// of one the forge could not be asked about.
const (
	ReasonNotDelivered    = "NotDelivered"
	ReasonDeliveryUnknown = "DeliveryUnknown"
)

// DeliveryVerdict is what the forge says.
type DeliveryVerdict struct {
	Delivered bool `json:"delivered"`
	// Where is DeliveredOnBase, DeliveredInPullRequest or DeliveredNotReferenced.
	Where string `json:"where,omitempty"`
	// PR is the pull request's number and URL when Where is DeliveredInPullRequest.
	PR    int    `json:"pr,omitempty"`
	PRURL string `json:"prURL,omitempty"`
	// Branch and Base are the nudge branch and the base branch looked at.
	Branch string `json:"branch"`
	Base   string `json:"base"`
	// Message says it in a sentence, for the Component's Event.
	Message string `json:"message"`
}

// WithDelivery is s as the forge decides it (s ended with exit code 0):
// delivered, the run succeeded whatever its log said; not delivered, it failed,
// with the step's reason when its log named one (registry-auth-failed and the
// like: what to fix) and ReasonNotDelivered otherwise.
func (s RunStatus) WithDelivery(v DeliveryVerdict) RunStatus {
	switch {
	case v.Delivered:
		s.Succeeded = true
	case s.Succeeded:
		s.Succeeded, s.Reason, s.Message = false, ReasonNotDelivered, "Renovate exited 0 and its log names no failure, but "+v.Message
	default:
		s.Message += "; " + v.Message
	}
	return s
}
