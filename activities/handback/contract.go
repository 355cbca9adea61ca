package handback

import (
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/contracts/handbackapi"
)

// The activities' contract (names, requests, results) lives in contracts/handbackapi,
// where a workflow finds it without linking this package and its forge clients;
// these names keep the activities' code reading as it did.
const (
	Activity    = handbackapi.Activity
	EventReason = handbackapi.EventReason
)

type (
	Build   = handbackapi.Build
	Request = handbackapi.Request
	Result  = handbackapi.Result
)

// The group a build is handed over to is signalled through the ChangeGroup
// workflow's contract.
const SignalComponentBuilt = changegroupapi.SignalComponentBuilt

// WorkflowID is changegroupapi.WorkflowID.
func WorkflowID(namespace, name, uid string) string {
	return changegroupapi.WorkflowID(namespace, name, uid)
}
