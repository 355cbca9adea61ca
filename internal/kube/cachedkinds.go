package kube

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
)

// WithReleaseCache returns c with its ReleasePlanAdmission reads served from an
// informer cache (started here, stopped with ctx). They are read cluster-wide
// on every ChangeGroup sync and Renovate launch, and change rarely; every other kind
// is still read live. A cluster that does not serve the kind (no release-service)
// gets c back unchanged: it has no distribution repositories to read.
func WithReleaseCache(ctx context.Context, cfg *rest.Config, c ctrlclient.Client) (ctrlclient.Client, error) {
	gvk := mirrorv1alpha1.GroupVersion.WithKind("ReleasePlanAdmission")
	if _, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); meta.IsNoMatchError(err) {
		return c, nil
	} else if err != nil {
		return nil, fmt.Errorf("looking up ReleasePlanAdmission: %w", err)
	}
	ca, err := cache.New(cfg, cache.Options{Scheme: c.Scheme(), Mapper: c.RESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("creating the ReleasePlanAdmission cache: %w", err)
	}
	if _, err := ca.GetInformer(ctx, &mirrorv1alpha1.ReleasePlanAdmission{}); err != nil {
		return nil, fmt.Errorf("watching ReleasePlanAdmissions: %w", err)
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the ReleasePlanAdmission cache did not sync")
	}
	return &releaseCached{Client: c, cache: ca}, nil
}

type releaseCached struct {
	ctrlclient.Client
	cache ctrlclient.Reader
}

func (r *releaseCached) Get(ctx context.Context, key ctrlclient.ObjectKey, obj ctrlclient.Object, opts ...ctrlclient.GetOption) error {
	if _, ok := obj.(*mirrorv1alpha1.ReleasePlanAdmission); ok {
		return r.cache.Get(ctx, key, obj, opts...)
	}
	return r.Client.Get(ctx, key, obj, opts...)
}

func (r *releaseCached) List(ctx context.Context, list ctrlclient.ObjectList, opts ...ctrlclient.ListOption) error {
	if _, ok := list.(*mirrorv1alpha1.ReleasePlanAdmissionList); ok {
		return r.cache.List(ctx, list, opts...)
	}
	return r.Client.List(ctx, list, opts...)
}
