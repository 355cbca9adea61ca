// Package forgedbuild is the forged-build attack on Temporal run as an attacker runs it:
// whoever reaches the Temporal frontend signals a workflow with a digest nobody
// built, with the Temporal CLI. nudgeflow's second line (activities/buildcheck)
// must refuse it: never in the group's pull request, a Warning Event with reason
// BuildNotVerified instead. The ChangeGroup suite (test/changegroup) runs it on
// the real worker; a black-box suite calls the same helpers.
package forgedbuild

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/buildcheck"
	"github.com/nudgeflow/nudgeflow/test/localenv"
)

// Digest is a digest nobody built: sha256 of fresh random bytes.
func Digest() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Temporal is where the attacker connects: the frontend's address and the
// Temporal namespace, plus whatever else the CLI needs to reach it (TLS flags,
// an API key) once the frontend asks for them.
type Temporal struct {
	Address, Namespace string
	ExtraArgs          []string
}

// Signal sends signal with input (marshalled to JSON) to workflowID with the
// Temporal CLI (TEMPORAL_CLI), as `temporal workflow signal` would from a laptop:
// nothing of nudgeflow's is involved on the sender's side. It returns the CLI's
// output.
func Signal(ctx context.Context, t Temporal, workflowID, signal string, input any) (string, error) {
	cli, err := localenv.TemporalCLI()
	if err != nil {
		return "", err
	}
	raw, err := json.Marshal(input)
	if err != nil {
		return "", fmt.Errorf("encoding the signal's input: %w", err)
	}
	args := append([]string{"workflow", "signal", "--address", t.Address, "--namespace", t.Namespace,
		"--workflow-id", workflowID, "--name", signal, "--input", string(raw)}, t.ExtraArgs...)
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("temporal workflow signal %s %s: %w: %s", workflowID, signal, err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// RefusalEvents are the BuildNotVerified Warning Events in namespace that name
// digest: what the worker leaves when it refuses a build.
func RefusalEvents(ctx context.Context, kube ctrlclient.Reader, namespace, digest string) ([]corev1.Event, error) {
	var list corev1.EventList
	if err := kube.List(ctx, &list, ctrlclient.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Events of %s: %w", namespace, err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Reason == buildcheck.EventReason && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, digest) {
			out = append(out, e)
		}
	}
	return out, nil
}
