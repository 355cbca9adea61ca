package renovate

import "github.com/nudgeflow/nudgeflow/contracts/renovateapi"

// The activities' contract (names, requests, results, error types) lives in
// contracts/renovateapi, where the Nudge workflow finds it without linking this
// package and its forge clients; these names keep the activities' code reading
// as it did.
const ErrorTypeSuperseded = renovateapi.ErrorTypeSuperseded

// NonRetryableErrorTypes are the error types a retry never fixes.
var NonRetryableErrorTypes = renovateapi.NonRetryableErrorTypes

type (
	LaunchRequest   = renovateapi.LaunchRequest
	LaunchResult    = renovateapi.LaunchResult
	DeliveryRequest = renovateapi.DeliveryRequest
	Outcome         = renovateapi.Outcome
)

// RunName is renovateapi.RunName.
func RunName(workflowID string, attempt int) string { return renovateapi.RunName(workflowID, attempt) }
