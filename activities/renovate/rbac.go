package renovate

// What the Renovate activities read and write. LaunchRenovate creates the run
// pending, its config ConfigMap and token Secret, then patches the run to start it,
// and deletes the run instead when it cannot start it (so none stays pending);
// RecordNudgeOutcome writes Events on Components. ReleasePlanAdmissions are listed
// cluster-wide: they live in the managed namespaces, not the tenant's. ConfigMaps
// are read in tenant namespaces (the two tiers) and in nudgeflow's own namespace
// (the trusted CA bundle). The deploy test runs the worker as its ServiceAccount,
// so a missing verb fails there.
// +kubebuilder:rbac:groups=tekton.dev,resources=pipelineruns,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=components,verbs=get;list;watch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=releaseplanadmissions,verbs=get;list;watch
