package changegroupcontroller

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.temporal.io/sdk/client"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	"github.com/nudgeflow/nudgeflow/internal/autogroups"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	cgwf "github.com/nudgeflow/nudgeflow/workflows/changegroup"
)

// Options configure the ChangeGroup side of the bridge.
type Options struct {
	Temporal  client.Client
	TaskQueue string
	Settings  cgwf.Settings
	// Renudger nudges targets no group collects any more; optional.
	Renudger Renudger
	// Batches opens the automatic ChangeGroups of batched targets for the nudges of
	// other services held for a batch (nil: one on the manager's client and API
	// reader; share the builds bridge's, so one process opens one batch per target).
	Batches *autogroups.Opener
}

// Starter is how this feature starts and signals group workflows; kube (may be
// nil) lets it initialise a group it delivers to before the group's reconciler has.
func (o Options) Starter(kube ctrlclient.Client) *Starter {
	return &Starter{Temporal: o.Temporal, TaskQueue: o.TaskQueue, Settings: o.Settings, Kube: kube}
}

// prKeyField indexes groups by their PR as "host/owner/repo#number". The index is
// computed from status.pullRequestURL, which every group's status has held since
// its PR opened, so groups whose status was written before the key named the host
// are found too.
const prKeyField = "status.pullRequestKey"

// PRKey derives "host/owner/repo#number" from a PR's web URL
// (https://host/owner/repo/pull/7 on GitHub, .../group/sub/project/-/merge_requests/7
// on GitLab, .../owner/repo/pulls/7 on Forgejo): the same path on two forges is two
// repositories. Host and path are compared case-insensitively; "" when the URL is
// not a PR's.
func PRKey(prURL string) string {
	repo, n, ok := forgehook.PRRepo(prURL)
	if !ok {
		return ""
	}
	return repo + "#" + strconv.Itoa(n)
}

// Setup registers the reconcilers and webhooks and returns the router that
// delivers forge events to the groups' workflows.
func Setup(mgr ctrl.Manager, opts Options) (*PREventRouter, error) {
	recorder := mgr.GetEventRecorderFor("nudgeflow")
	starter := opts.Starter(mgr.GetClient())
	if err := (&Reconciler{
		Kube: mgr.GetClient(), Temporal: opts.Temporal, Starter: starter, Recorder: recorder,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the ChangeGroup reconciler: %w", err)
	}
	if opts.Batches == nil {
		opts.Batches = &autogroups.Opener{Kube: mgr.GetClient(), Live: mgr.GetAPIReader()}
	}
	if err := (&HeldReconciler{
		Kube: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Starter: starter, Recorder: recorder, Renudger: opts.Renudger,
		Batches: opts.Batches,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the held-nudge reconciler: %w", err)
	}
	// Admission reads the informer cache, never the API server; the Index covers the
	// groups admitted a moment ago that the cache has not received yet.
	if err := grouplookup.RegisterIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	index := &grouplookup.Index{Cache: mgr.GetClient(), Live: mgr.GetAPIReader()}
	if err := ctrl.NewWebhookManagedBy(mgr).For(&appstudiov1alpha1.ChangeGroup{}).
		WithValidator(timedValidator{WebhookChangeGroup, &Validator{Index: index, Cache: mgr.GetClient(), APIReader: mgr.GetAPIReader()}}).Complete(); err != nil {
		return nil, fmt.Errorf("setting up the ChangeGroup webhook: %w", err)
	}
	mgr.GetWebhookServer().Register(InterceptPath, &webhook.Admission{Handler: timedHandler{WebhookIntercept, &Interceptor{Index: index, Batches: NudgeConfigBatches{Reader: mgr.GetClient()}, Gates: NudgeConfigBatches{Reader: mgr.GetClient()}, Builds: mgr.GetClient(), BuildsLive: mgr.GetAPIReader()}}})
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &appstudiov1alpha1.ChangeGroup{}, prKeyField,
		func(o ctrlclient.Object) []string {
			if k := PRKey(o.(*appstudiov1alpha1.ChangeGroup).Status.PullRequestURL); k != "" {
				return []string{k}
			}
			return nil
		}); err != nil {
		return nil, fmt.Errorf("indexing ChangeGroups by pull request: %w", err)
	}
	return &PREventRouter{Kube: mgr.GetClient(), Temporal: opts.Temporal}, nil
}

// PREventRouter delivers a forge event about a pull request to the group that owns it.
type PREventRouter struct {
	Kube     ctrlclient.Reader
	Temporal client.Client
	// Also receive every event after the ChangeGroups (other features: PR groups).
	Also []forgehook.Sink
}

// PullRequestEvent delivers a verified forge event (forgehook.Sink), routed by the
// PR's URL: host, repository and number. An event without a URL names no group.
//
// The signal never says merged or closed: a group ends only on the pull request's
// state as the forge answers when the group reads it. Groups started since the
// forge-says-end change read it on any event; older groups (their histories keep
// replaying the command sequence they began with) would end Completed on an event
// that says merged, so the bridge keeps that to itself and they read the PR too.
// A leaked shared secret can then wake a group, never end it.
func (p *PREventRouter) PullRequestEvent(ctx context.Context, e forgehook.Event) error {
	key := PRKey(e.URL)
	if key == "" {
		return nil
	}
	_, err := p.deliver(ctx, key, e.Namespace, cgwf.PREvent{DeliveryID: e.DeliveryID, Action: e.Action, Number: e.Number})
	for _, s := range p.Also {
		err = errors.Join(err, s.PullRequestEvent(ctx, e))
	}
	return err
}

// Deliver signals every group whose status names the PR (normally one). An event
// for a PR no group owns is ignored.
func (p *PREventRouter) Deliver(ctx context.Context, prKey string, ev cgwf.PREvent) (int, error) {
	return p.deliver(ctx, prKey, "", ev)
}

// deliver is Deliver limited to one namespace's groups when namespace is set (an
// event verified by a secret bound to that namespace, forgehook.BoundSecret).
func (p *PREventRouter) deliver(ctx context.Context, prKey, namespace string, ev cgwf.PREvent) (int, error) {
	var list appstudiov1alpha1.ChangeGroupList
	if err := p.Kube.List(ctx, &list, ctrlclient.MatchingFields{prKeyField: prKey}); err != nil {
		return 0, fmt.Errorf("finding the ChangeGroup of %s: %w", prKey, err)
	}
	delivered := 0
	for _, cg := range list.Items {
		if namespace != "" && cg.Namespace != namespace {
			continue
		}
		id := cgwf.WorkflowID(cg.Namespace, cg.Name, string(cg.UID))
		err := p.Temporal.SignalWorkflow(ctx, id, "", cgwf.SignalPREvent, ev)
		if isGone(err) {
			continue
		}
		if err != nil {
			return delivered, fmt.Errorf("signalling %s: %w", id, err)
		}
		delivered++
	}
	return delivered, nil
}
