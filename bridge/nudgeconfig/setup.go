// Package nudgeconfig guards and watches the namespace's NudgeConfig (ADR 67): an
// admission webhook rejects duplicate pairs, cycles and unknown components of
// nudgeflow's own kind before they are stored, and a controller reports in status
// which referenced components have since disappeared and, in an Event, who nudges
// each edge. integration-service's kind (appstudio.redhat.com/v1beta2) is watched
// the same way where the cluster serves it; its admission stays integration-service's.
package nudgeconfig

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/internal/nudgeconfigs"
)

// Setup registers the validating webhook and a stale-reference controller per
// NudgeConfig kind the API server serves. The webhook is only called where
// deploy/webhooks/nudgeconfig.yaml is installed (not beside integration-service).
func Setup(mgr ctrl.Manager, peers builds.Peers) error {
	// A nudgeconfigs.konflux-ci.dev that is not nudgeflow's (ADR 68 moves Konflux's
	// NudgeConfig there) is neither admitted nor read as nudgeflow's kind: the
	// bridge stops with the migration to do rather than run on another owner's schema.
	if err := nudgeconfigs.CheckOwnGroup(mgr.GetRESTMapper()); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr).
		For(&konfluxv1alpha1.NudgeConfig{}).
		WithValidator(&Validator{Reader: mgr.GetAPIReader()}).
		WithValidatorCustomPath(webhookPath).
		Complete(); err != nil {
		return fmt.Errorf("registering the NudgeConfig webhook: %w", err)
	}
	shipped, own, err := nudgeconfigs.Served(mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	recorder := mgr.GetEventRecorderFor("nudgeflow")
	for _, kind := range []struct{ served, shipped bool }{{own, false}, {shipped, true}} {
		if !kind.served {
			continue
		}
		r := &Reconciler{Client: mgr.GetClient(), Shipped: kind.shipped, Peers: peers, Recorder: recorder}
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("registering the NudgeConfig stale-reference controller: %w", err)
		}
	}
	return nil
}
