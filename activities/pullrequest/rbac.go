package pullrequest

// Forge credentials are read from Secrets at call time, never passed around.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// Distribution repositories come from ReleasePlanAdmissions in managed namespaces
// (internal/releases lists them cluster-wide).
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=releaseplanadmissions,verbs=get;list;watch
