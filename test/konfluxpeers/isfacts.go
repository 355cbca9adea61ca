package konfluxpeers

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/digestref"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

const (
	// ChainsSignedAnnotation is Tekton Chains' mark on a signed PipelineRun
	// (IS:tekton/consts/consts.go:130).
	ChainsSignedAnnotation = "chains.tekton.dev/signed"
	// ISDefaultPipelineServiceAccount is the ServiceAccount integration-service
	// reads image credentials from when the build names none
	// (IS:tekton/consts/consts.go:245).
	ISDefaultPipelineServiceAccount = "appstudio-pipeline"
)

// Chains stands in for Tekton Chains: it signs a succeeded push build. (Chains
// takes seconds to minutes; nothing here depends on how long.)
type Chains struct{ Client ctrlclient.Client }

// Reconcile signs one build.
func (c *Chains) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var plr tektonv1.PipelineRun
	if err := c.Client.Get(ctx, req.NamespacedName, &plr); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if !succeeded(&plr) || plr.Annotations[ChainsSignedAnnotation] == "true" {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, patchMeta(ctx, c.Client, &plr, annotate(ChainsSignedAnnotation, "true"))
}

// snapshotHolds reports whether a Snapshot of the namespace holds the build's
// image for its component.
func snapshotHolds(ctx context.Context, c ctrlclient.Reader, plr *tektonv1.PipelineRun) (bool, error) {
	imageURL, digest := konflux.BuildResults(plr)
	pullSpec := digestref.PullSpec(imageURL, digest)
	var list mirrorv1alpha1.SnapshotList
	if err := c.List(ctx, &list, ctrlclient.InNamespace(plr.Namespace)); err != nil {
		return false, err
	}
	component := plr.Labels[builds.LabelComponent]
	for _, s := range list.Items {
		if slices.ContainsFunc(s.Spec.Components, func(sc mirrorv1alpha1.SnapshotComponent) bool {
			return sc.Name == component && sc.ContainerImage == pullSpec
		}) {
			return true, nil
		}
	}
	return false, nil
}

// withBasicAuth keeps the targets integration-service finds credentials for: a
// git source URL, and a basic-auth SCM Secret for its host and repository
// (GetNudgeTargetsBasicAuth, lookupSCMCredentials: the same labels and matching
// as build-service's, credentials.Lookup).
func withBasicAuth(ctx context.Context, c ctrlclient.Reader, ns string, targets []string) ([]string, error) {
	var out []string
	for _, name := range targets {
		var comp mirrorv1alpha1.Component
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &comp); err != nil {
			if ctrlclient.IgnoreNotFound(err) == nil {
				continue
			}
			return nil, err
		}
		if comp.Spec.Source.GitSource == nil || comp.Spec.Source.GitSource.URL == "" {
			continue
		}
		u, err := url.Parse(comp.Spec.Source.GitSource.URL)
		if err != nil || u.Host == "" {
			continue
		}
		repo := strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git")
		if _, err := credentials.Lookup(ctx, c, ns, u.Host, repo); err != nil {
			if errors.Is(err, credentials.ErrNotFound) {
				continue
			}
			return nil, fmt.Errorf("integration-service stand-in: %w", err)
		}
		out = append(out, name)
	}
	return out, nil
}
