package changegrouppr

// Forge credentials are read from Secrets at call time, never passed around: the
// GitHub App's by name (get), the tenant's basic-auth SCM Secrets by label (list:
// their names are the tenant's choice). The client reads live: no watch.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list

// Distribution repositories come from ReleasePlanAdmissions in managed namespaces
// (internal/releases lists them cluster-wide, from an informer: watch).
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=releaseplanadmissions,verbs=get;list;watch
