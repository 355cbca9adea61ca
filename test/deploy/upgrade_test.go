package deploy_test

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
)

const (
	argoSyncWave = "argocd.argoproj.io/sync-wave"
	argoHook     = "argocd.argoproj.io/hook"
)

// Under Argo CD every variant upgrades in the order
// deploy/UPGRADING.md gives. Argo CD applies a sync's resources wave by wave and
// waits for a wave to be healthy (a hook Job: completed) before the next: the
// namespace and the CRDs come first, then everything else but the workloads, then
// the setup Job (the one hook), then the Deployments, so the search attributes
// exist before new code starts a workflow. Argo CD does not run here: the
// annotations are checked as rendered.
func TestArgoCDSyncsInTheUpgradeOrder(t *testing.T) {
	for _, v := range append(variants(t), renamespacedVariants(t)...) {
		t.Run(v.name, func(t *testing.T) {
			wave := func(kind, name string, annotations map[string]string) int {
				s, ok := annotations[argoSyncWave]
				if !ok {
					return 0
				}
				n, err := strconv.Atoi(s)
				require.NoError(t, err, "%s %s: %s", kind, name, argoSyncWave)
				return n
			}
			first, others, job, deployments := math.MinInt, map[int]bool{}, 0, map[int]bool{}
			hasJob := false
			for _, o := range v.objs {
				w := wave(o.GetKind(), o.GetName(), o.GetAnnotations())
				hook, isHook := o.GetAnnotations()[argoHook]
				switch o.GetKind() {
				case "CustomResourceDefinition", "Namespace":
					require.False(t, isHook, "%s %s is no hook", o.GetKind(), o.GetName())
					if w > first {
						first = w
					}
				case "Job":
					require.Equal(t, "nudgeflow-temporal-setup", o.GetName())
					require.Equal(t, "Sync", hook, "the setup Job is a Sync hook: recreated at every sync, waited for")
					job, hasJob = w, true
				case "Deployment":
					require.False(t, isHook, "Deployment %s is no hook", o.GetName())
					deployments[w] = true
				default:
					require.False(t, isHook, "%s %s is no hook: Argo CD neither prunes nor tracks hooks", o.GetKind(), o.GetName())
					others[w] = true
				}
			}
			for w := range others {
				require.Less(t, first, w, "the namespace and the CRDs come before everything else")
				if hasJob {
					require.Less(t, w, job, "the setup Job runs after the ConfigMaps, ServiceAccounts and RBAC it uses")
				}
				for d := range deployments {
					require.Less(t, w, d, "the Deployments come last")
				}
			}
			require.Len(t, deployments, 1, "the Deployments are one wave")
			for d := range deployments {
				if hasJob {
					require.Less(t, job, d, "the setup Job completes before new code starts")
				}
			}
			require.Equal(t, !slices.Contains(v.features, "cloud"), hasJob, "every variant but Temporal Cloud's runs the setup Job")
		})
	}
}

// The worker gives its Renovate runs the image of RENOVATE_IMAGE, which every
// variant sets from the ConfigMap nudgeflow-renovate, pinned by digest; an
// operator's kustomization sets another with an `images:` entry, as it sets
// nudgeflow's own, and the new ConfigMap hash rolls the worker.
func TestRenovateImageIsPinnedAndSettable(t *testing.T) {
	const name = "quay.io/konflux-ci/mintmaker-renovate-image"
	renovateImage := func(t *testing.T, m manifests) (string, string) {
		t.Helper()
		worker := m.deployment(t, "nudgeflow-worker")
		for _, ef := range worker.Spec.Template.Spec.Containers[0].EnvFrom {
			if ef.ConfigMapRef == nil {
				continue
			}
			cm := get[corev1.ConfigMap](t, m, "ConfigMap", ef.ConfigMapRef.Name)
			if img, ok := cm.Data["RENOVATE_IMAGE"]; ok {
				return cm.Name, img
			}
		}
		t.Fatal("the worker reads RENOVATE_IMAGE from a ConfigMap")
		return "", ""
	}
	for _, v := range append(variants(t), renamespacedVariants(t)...) {
		_, img := renovateImage(t, v.objs)
		require.Regexp(t, digestRef, img, "%s: the Renovate image is pinned by digest", v.name)
		require.Regexp(t, "^"+name+"@", img, v.name)
	}

	shippedCM, _ := renovateImage(t, variants(t)[0].objs)
	scratch := t.TempDir()
	rel, err := filepath.Rel(scratch, deployDir("overlays", "cert-manager"))
	require.NoError(t, err)
	digest := "sha256:" + "5e" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd"
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + rel +
		"\nimages:\n  - name: " + name + "\n    newName: registry.example.com/mirror/renovate\n    digest: " + digest + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(scratch, "kustomization.yaml"), []byte(k), 0o600))
	_, m := kustomize(t, scratch)
	cm, img := renovateImage(t, m)
	require.Equal(t, "registry.example.com/mirror/renovate@"+digest, img, "an images: entry sets the Renovate image")
	require.NotEqual(t, shippedCM, cm, "a new image is a new ConfigMap: the worker rolls")

	// The binary reads it from there (as build-service and integration-service read it).
	t.Setenv("RENOVATE_IMAGE", img)
	require.Equal(t, img, renovate.New(nil, "").Image)
}
