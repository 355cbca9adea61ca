package renovate

// LaunchRenovate creates the run pending, its config ConfigMap and token Secret, then
// patches the run to start it; RecordNudgeOutcome writes Events on Components. The
// deploy test runs the worker as its ServiceAccount, so a missing verb fails there.
// +kubebuilder:rbac:groups=tekton.dev,resources=pipelineruns,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=components,verbs=get;list;watch
