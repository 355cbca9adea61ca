// Package nudgeconfig guards and watches the namespace's NudgeConfig (ADR 67): an
// admission webhook rejects duplicate pairs, cycles and unknown components before they
// are stored, and a controller reports in status which referenced components have since
// disappeared.
package nudgeconfig

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
)

// Setup registers the validating webhook and the stale-reference controller.
func Setup(mgr ctrl.Manager) error {
	if err := ctrl.NewWebhookManagedBy(mgr).
		For(&konfluxv1alpha1.NudgeConfig{}).
		WithValidator(&Validator{Reader: mgr.GetAPIReader()}).
		WithValidatorCustomPath(WebhookPath).
		Complete(); err != nil {
		return fmt.Errorf("registering the NudgeConfig webhook: %w", err)
	}
	if err := (&Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("registering the NudgeConfig stale-reference controller: %w", err)
	}
	return nil
}
