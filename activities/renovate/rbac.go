package renovate

// What the Renovate activities read and write. ReleasePlanAdmissions are listed
// cluster-wide: they live in the managed namespaces, not the tenant's. ConfigMaps
// are read in tenant namespaces (the two tiers) and in nudgeflow's own namespace
// (the trusted CA bundle), and created beside each run like its Secret.
// +kubebuilder:rbac:groups=tekton.dev,resources=pipelineruns,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;create
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;create
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get
// +kubebuilder:rbac:groups="",resources=events,verbs=create
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=components,verbs=get
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=releaseplanadmissions,verbs=get;list;watch
