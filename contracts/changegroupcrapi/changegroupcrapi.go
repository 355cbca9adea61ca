// Package changegroupcrapi is the contract of the ChangeGroup CR activities
// (activities/changegroupcr): their registered names, requests and results.
package changegroupcrapi

import (
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
)

// Activity names; never rename (histories replay by name).
const (
	ResolveActivity     = "ResolveChangeGroup"
	WriteStatusActivity = "WriteChangeGroupStatus"
	EventActivity       = "RecordChangeGroupEvent"
)

// ResolveRequest names the group and, optionally, the components to resolve.
type ResolveRequest struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// Components to resolve; when empty the CR's spec decides, and an empty spec is
	// filled with every component that nudges the nudged one (and written back).
	Components []string `json:"components,omitempty"`
}

// ResolvedComponent is one nudging component as the group starts.
type ResolvedComponent struct {
	Name string `json:"name"`
	// Image is the repository whose references the PR rewrites (no tag, no digest).
	Image string `json:"image"`
	// Original is the digest of the component's last promoted build, when known.
	Original string `json:"original,omitempty"`
}

// Resolved is what the workflow needs from the cluster.
type Resolved struct {
	NudgedComponent string                `json:"nudgedComponent"`
	Repo            changegroupprapi.Repo `json:"repo"`
	FileMatch       []string              `json:"fileMatch"`
	Components      []ResolvedComponent   `json:"components"`
	// SpecFilled says the CR's empty nudgingComponents was filled by this call.
	SpecFilled bool `json:"specFilled,omitempty"`
}

// StatusRequest carries the projection to write.
type StatusRequest struct {
	Namespace string                              `json:"namespace"`
	Name      string                              `json:"name"`
	UID       string                              `json:"uid"`
	Status    appstudiov1alpha1.ChangeGroupStatus `json:"status"`
}

// EventRequest records one Event on the group. Key makes it idempotent: the same
// group, reason and key name the same Event, which is created once.
type EventRequest struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// Type is Normal or Warning.
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Key     string `json:"key"`
}
