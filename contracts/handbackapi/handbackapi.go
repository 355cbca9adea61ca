// Package handbackapi is the contract of the hand-back activity
// (activities/handback): a ChangeGroup that ends hands its collected builds back
// to normal nudging by this name, request and result.
package handbackapi

import "github.com/nudgeflow/nudgeflow/internal/imagebuild"

// Activity is the registered name; never change it (histories replay by name).
const Activity = "HandBackBuilds"

// EventReason is the reason of the Event on the ChangeGroup.
const EventReason = "BuildsHandedBack"

// Build is one build a group held, whole as the group received it. No secrets.
type Build struct {
	Component string `json:"component"`
	imagebuild.Build
	// Why this build is handed back, in a person's words.
	Why string `json:"why"`
	// Next: the build came after its automatic group stopped collecting (released,
	// or merged): it belongs to the target's next batch, which is opened for it.
	Next bool `json:"next,omitempty"`
}

// Request hands builds of one group back.
type Request struct {
	Namespace   string  `json:"namespace"`
	ChangeGroup string  `json:"changeGroup"`
	UID         string  `json:"uid"`
	Target      string  `json:"target"`
	Builds      []Build `json:"builds"`
}

// Result names the Nudge workflows that now carry the builds, and the builds
// handed over to another ChangeGroup ("component@digest -> group").
type Result struct {
	Nudges     []string `json:"nudges"`
	HandedOver []string `json:"handedOver,omitempty"`
}
