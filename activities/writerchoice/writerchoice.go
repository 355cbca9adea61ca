// Package writerchoice chooses who writes an immediate nudge's pull request:
// nudgeflow's direct writer (activities/nudgewrite, no PipelineRun) or a Renovate
// PipelineRun as ADR 67 has it. The Nudge workflow asks it right before it would
// write, so the answer is the cluster's at that moment: the NudgeConfig's setting
// (the edge's, else the namespace's), else the worker's default, and never the
// direct writer for an edge an active ChangeGroup holds (the direct path has no
// PipelineRun for the group's admission webhook to hold: the group must see the
// build as before, so that nudge takes the Renovate path and is held there).
package writerchoice

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
)

// Activities reads the cluster.
type Activities struct {
	// Kube reads NudgeConfigs and ChangeGroups (an uncached client is fine: one
	// GET and one LIST per nudge).
	Kube ctrlclient.Reader
	// Default is the worker's --immediate-writer: the setting where no NudgeConfig
	// says one (empty: auto).
	Default konfluxv1alpha1.ImmediateWriter
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// The NudgeConfigs (both kinds) and ChangeGroups the choice reads; the worker
// reads them already for batching and hand-backs.
// +kubebuilder:rbac:groups=konflux-ci.dev,resources=nudgeconfigs,verbs=get
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=nudgeconfigs,verbs=get
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=changegroups,verbs=list

// Register adds the activity under nudgeapi.ChooseWriterActivity.
func (a *Activities) Register(r sdkworker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.ChooseNudgeWriter, activity.RegisterOptions{Name: nudgeapi.ChooseWriterActivity})
}

// ChooseNudgeWriter says which writer writes req's nudge and why. It fails, to be
// retried, only when the cluster cannot be read.
func (a *Activities) ChooseNudgeWriter(ctx context.Context, req nudgeapi.WriterChoiceRequest) (nudgeapi.WriterChoice, error) {
	if req.Namespace == "" || req.Nudging == "" || req.Nudged == "" {
		return nudgeapi.WriterChoice{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("choosing a writer needs a namespace and an edge, got %q %q -> %q", req.Namespace, req.Nudging, req.Nudged), nudgeapi.ErrorTypeInvalidChoice, nil)
	}
	setting, from, err := a.setting(ctx, req)
	if err != nil {
		return nudgeapi.WriterChoice{}, err
	}
	choice := nudgeapi.WriterChoice{Writer: nudgeapi.WriterDirect, Setting: string(setting), Reason: from}
	if setting == konfluxv1alpha1.WriterRenovate {
		choice.Writer = nudgeapi.WriterRenovate
		return choice, nil
	}
	cg, err := grouplookup.FindHoldingAt(ctx, a.Kube, req.Namespace, req.Nudging, req.Nudged, a.now())
	if err != nil {
		return nudgeapi.WriterChoice{}, fmt.Errorf("reading the ChangeGroups that may hold %s: %w", nudgeapi.Edge(req.Nudging, req.Nudged), err)
	}
	if cg != nil && grouplookup.IsActive(cg) && cg.Name != req.HandedBackBy {
		choice.Writer, choice.HeldBy = nudgeapi.WriterRenovate, cg.Name
		choice.Reason = fmt.Sprintf("ChangeGroup %s holds %s: the nudge takes the Renovate path, whose run the group holds at admission (%s)",
			cg.Name, nudgeapi.Edge(req.Nudging, req.Nudged), from)
	}
	return choice, nil
}

// setting is the edge's writer setting and where it comes from: the NudgeConfig's
// edge, else its spec, else the worker's default, else auto.
func (a *Activities) setting(ctx context.Context, req nudgeapi.WriterChoiceRequest) (konfluxv1alpha1.ImmediateWriter, string, error) {
	nc, err := nudgeconfigs.Get(ctx, a.Kube, req.Namespace)
	if err != nil && nc == nil {
		return "", "", fmt.Errorf("reading the NudgeConfig of %s: %w", req.Namespace, err)
	}
	if nc != nil {
		if w, from := nc.Spec.WriterOf(req.Nudging, req.Nudged); w != "" {
			return w, "immediateWriter " + string(w) + " set by " + from, nil
		}
	}
	if a.Default != "" {
		return a.Default, "the worker's --immediate-writer " + string(a.Default), nil
	}
	return konfluxv1alpha1.WriterAuto, "the default immediate writer " + string(konfluxv1alpha1.WriterAuto), nil
}

func (a *Activities) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}
