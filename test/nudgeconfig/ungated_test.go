package nudgeconfig_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	"github.com/nudgeflow/nudgeflow/test/world"
)

func ungatedEdge(from, to string) konfluxv1alpha1.NudgeRelationship {
	return konfluxv1alpha1.NudgeRelationship{From: from, To: to, Mode: konfluxv1alpha1.ModeValidated}
}

// refusedUngated is the message for entry i, from -> to, with the candidates part.
func refusedUngated(i, from, to, candidates string) string {
	return `spec.nudges[` + i + `].gatingGroup: Required value: validated edge ` + from + ` -> ` + to +
		` needs a gatingGroup (ADR 67: required when mode is validated): add ` + "`gatingGroup: <a ComponentGroup>`" +
		` naming the group whose Snapshot must pass before ` + to + ` is nudged (` + candidates + `), or make this edge immediate`
}

// ADR 67: gatingGroup is "required when mode=validated". nudgeflow's admission took
// ungated validated edges for a while (928b660), so it refuses them again only for
// the edges a request adds: on create, a new pair, an immediate edge turned
// validated, a gatingGroup removed. A CR stored with one (here: stored as that
// admission stored it) stays updatable, and its edge keeps working ungated.
func TestUngatedValidatedEdgeRefusedWhenAddedStoredOneStaysUpdatable(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	ns := w.Namespace(t)
	createComponents(t, w, ns, []string{"a", "b", "c", "d"}, nil)
	group := &mirrorv1beta2.ComponentGroup{ObjectMeta: metav1.ObjectMeta{Name: "frontend", Namespace: ns},
		Spec: mirrorv1beta2.ComponentGroupSpec{Components: []mirrorv1beta2.ComponentGroupMember{{Name: "a"}, {Name: "b"}}}}
	require.NoError(t, w.Kube.Create(ctx, group))

	err := w.Kube.Create(ctx, nudgeConfig(ns, immediateEdge("a", "c"), ungatedEdge("a", "b"), ungatedEdge("c", "d")))
	require.Error(t, err)
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	require.Equal(t, webhookDenied+"["+refusedUngated("1", "a", "b", "ComponentGroups listing a: frontend")+", "+
		refusedUngated("2", "c", "d", "no ComponentGroup in namespace "+ns+" lists c yet")+"]", err.Error(),
		"each added ungated edge is named with the field to add and the groups that could gate it")

	// A CR stored while admission took ungated edges.
	storeAsBefore(t, w, nudgeConfig(ns, immediateEdge("a", "c"), ungatedEdge("a", "b")))

	_, err = patchNudges(t, w.Kube, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
		nc.Spec.Nudges = append(nc.Spec.Nudges, immediateEdge("b", "d"))
		nc.Labels = map[string]string{"team": "frontend"}
	})
	require.NoError(t, err, "an update that keeps the stored ungated a -> b is admitted")

	_, err = patchNudges(t, w.Kube, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
		nc.Spec.Nudges = append(nc.Spec.Nudges, ungatedEdge("c", "d"))
	})
	require.Equal(t, webhookDenied+refusedUngated("3", "c", "d", "no ComponentGroup in namespace "+ns+" lists c yet"), errString(err),
		"an update adding one is refused, naming only it")

	_, err = patchNudges(t, w.Kube, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
		nc.Spec.Nudges[0] = ungatedEdge("a", "c")
	})
	require.Equal(t, webhookDenied+refusedUngated("0", "a", "c", "ComponentGroups listing a: frontend"), errString(err),
		"turning an immediate edge validated without a group adds one")

	// The fix the message names: gate it. Then removing the group again adds it back.
	_, err = patchNudges(t, w.Kube, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
		nc.Spec.Nudges[1].GatingGroup = "frontend"
	})
	require.NoError(t, err)
	_, err = patchNudges(t, w.Kube, ns, func(nc *konfluxv1alpha1.NudgeConfig) {
		nc.Spec.Nudges[1].GatingGroup = ""
	})
	require.Equal(t, webhookDenied+refusedUngated("1", "a", "b", "ComponentGroups listing a: frontend"), errString(err),
		"removing a gatingGroup adds an ungated edge")
}

func errString(err error) string {
	if err == nil {
		return "<admitted>"
	}
	return err.Error()
}

// storeAsBefore stores nc as an admission that took ungated validated edges did: the
// webhook is taken off ns (its namespaceSelector excludes it) for this create only,
// then put back; both waits are on the API server admitting, or refusing, a dry run.
// The package's tests run one at a time, and no other test uses ns.
func storeAsBefore(t *testing.T, w *world.World, nc *konfluxv1alpha1.NudgeConfig) {
	t.Helper()
	ctx := context.Background()
	key := ctrlclient.ObjectKey{Name: "nudgeflow-nudgeconfig"}
	setExcluded := func(excluded bool) {
		var cfg admissionregistrationv1.ValidatingWebhookConfiguration
		require.NoError(t, w.Kube.Get(ctx, key, &cfg))
		base := cfg.DeepCopy()
		for i := range cfg.Webhooks {
			for j := range cfg.Webhooks[i].NamespaceSelector.MatchExpressions {
				e := &cfg.Webhooks[i].NamespaceSelector.MatchExpressions[j]
				if e.Key != "kubernetes.io/metadata.name" || e.Operator != metav1.LabelSelectorOpNotIn {
					continue
				}
				e.Values = slices.DeleteFunc(e.Values, func(v string) bool { return v == nc.Namespace })
				if excluded {
					e.Values = append(e.Values, nc.Namespace)
				}
			}
		}
		require.NoError(t, w.Kube.Patch(ctx, &cfg, ctrlclient.MergeFrom(base)))
	}
	setExcluded(true)
	restored := false
	defer func() {
		if !restored {
			setExcluded(false)
		}
	}()
	world.Eventually(t, 30*time.Second, "the webhook no longer admits "+nc.Namespace, func() (bool, error) {
		return true, w.Kube.Create(ctx, nc.DeepCopy(), ctrlclient.DryRunAll)
	})
	require.NoError(t, w.Kube.Create(ctx, nc))
	setExcluded(false)
	restored = true
	world.Eventually(t, 30*time.Second, "the webhook admits "+nc.Namespace+" again", func() (bool, error) {
		var dup konfluxv1alpha1.NudgeConfig
		if err := w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(nc), &dup); err != nil {
			return false, err
		}
		dup.Spec.Nudges = append(dup.Spec.Nudges, dup.Spec.Nudges[0]) // a duplicate pair: only the webhook refuses it
		err := w.Kube.Update(ctx, &dup, ctrlclient.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "denied the request"), nil
	})
}
