// Package changegroupcr is the ChangeGroup workflow's Kubernetes side: it resolves
// what the group needs from the cluster (the nudged repository, file patterns,
// each nudging component's image and original digest) and writes the CR status,
// the projection of the workflow's state.
package changegroupcr

import "github.com/nudgeflow/nudgeflow/contracts/changegroupcrapi"

// The activities' contract (names, requests, results) lives in contracts/changegroupcrapi,
// where a workflow finds it without linking this package and its forge clients;
// these names keep the activities' code reading as it did.
const (
	ResolveActivity     = changegroupcrapi.ResolveActivity
	WriteStatusActivity = changegroupcrapi.WriteStatusActivity
	EventActivity       = changegroupcrapi.EventActivity
)

type (
	ResolveRequest    = changegroupcrapi.ResolveRequest
	ResolvedComponent = changegroupcrapi.ResolvedComponent
	Resolved          = changegroupcrapi.Resolved
	StatusRequest     = changegroupcrapi.StatusRequest
	EventRequest      = changegroupcrapi.EventRequest
)
