package pullrequest

// Forge credentials are read from Secrets at call time, never passed around.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
