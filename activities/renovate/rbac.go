package renovate

// What the Renovate activities read and write, verb by verb (the worker's client
// reads live: no informer, so no watch, except the ReleasePlanAdmission cache of
// internal/kube). LaunchRenovate creates the run pending, then its config
// ConfigMap, CA ConfigMap and token Secret owned by it (create; get when a retry
// finds them), then patches the run to start it, and deletes the run instead when
// it cannot start it (so none stays pending); the supersede and branch queue list
// and patch the namespace's nudge runs; RecordNudgeOutcome creates Events on
// Components. ConfigMaps are read by name in tenant namespaces (the two tiers) and
// listed by label only in nudgeflow's own namespace (the trusted CA bundle: a Role
// there, not the ClusterRole). Secrets are listed in tenant namespaces because
// Konflux's SCM Secrets are found by label, under names the tenant chooses
// (credentials.Lookup, as build-service does): no lookup by name can replace it.
// Every Secret and ConfigMap the worker writes passes the ValidatingAdmissionPolicy
// nudgeflow-worker-writes (deploy/base/worker-writes.yaml): Opaque, labelled
// app.kubernetes.io/managed-by=nudgeflow, owned by a PipelineRun, named
// renovate-nudge-/renovate-ca-, outside system namespaces. The deploy test runs
// the worker as its ServiceAccount, so a missing verb fails there.
// +kubebuilder:rbac:groups=tekton.dev,resources=pipelineruns,verbs=get;list;create;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;create
// +kubebuilder:rbac:groups="",resources=secrets,verbs=list
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=list,namespace=nudgeflow-system
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get
// +kubebuilder:rbac:groups="",resources=events,verbs=create
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=components,verbs=get
// +kubebuilder:rbac:groups=konflux-ci.dev,resources=components,verbs=get
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=releaseplanadmissions,verbs=get;list;watch
