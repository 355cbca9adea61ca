package nudgewrite

// What the writer reads, live (no watch but the ReleasePlanAdmission cache): the
// nudged and nudging Components, the tenant's Renovate ConfigMap tiers by name,
// the build PipelineRun (its source commit), the SCM Secrets by label and the
// GitHub App Secret by name (through changegrouppr's Connect), and
// ReleasePlanAdmissions (distribution repositories). It writes nothing in the
// cluster but a refusal's Event (ownership). The same verbs as the Renovate
// launch's and the ChangeGroup writer's, stated here for this package.
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=components,verbs=get
// +kubebuilder:rbac:groups=konflux-ci.dev,resources=components,verbs=get
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list
// +kubebuilder:rbac:groups=tekton.dev,resources=pipelineruns,verbs=get
// +kubebuilder:rbac:groups="",resources=events,verbs=create
// +kubebuilder:rbac:groups=appstudio.redhat.com,resources=releaseplanadmissions,verbs=get;list;watch
