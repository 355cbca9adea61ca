package bench

import (
	"fmt"
	"time"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	"github.com/nudgeflow/nudgeflow/internal/konflux"
)

// The PipelineRuns of a Konflux cluster, as the bridge-scale measure writes them:
// what Pipelines as Code and build-service write on a build (labels, annotations,
// a bundle-resolved pipelineRef, params, workspaces, a taskRunTemplate), what
// Tekton writes in its status (the resolved pipeline in status.pipelineSpec, tens
// of KB, a child reference per task, results, conditions), and the share of runs
// the bridge has no business with.
const (
	scaleNamespaces = 50 // tenant namespaces the runs spread over
	scaleTasks      = 18 // tasks of a docker-build-oci-ta pipeline, roughly
)

// scaleKind is the kind of the i-th run: 70% builds (half push, half pull
// request), 5% nudges (build-service's Renovate runs), 25% neither — integration
// tests (pipelines.appstudio.openshift.io/type=test) and release pipelines.
type scaleKind int

const (
	scalePushBuild scaleKind = iota
	scalePRBuild
	scaleNudge
	scaleTest
	scaleRelease
)

func scaleKindOf(i int) scaleKind {
	switch r := i % 20; {
	case r < 7:
		return scalePushBuild
	case r < 14:
		return scalePRBuild
	case r < 15:
		return scaleNudge
	case r < 18:
		return scaleTest
	default:
		return scaleRelease
	}
}

func scaleNamespace(i int) string { return fmt.Sprintf("bench-scale-%d", i%scaleNamespaces) }

// bundleRef is a Tekton bundle resolver reference to a Konflux catalog task or pipeline.
func bundleRef(kind, name string) tektonv1.ResolverRef {
	return tektonv1.ResolverRef{Resolver: "bundles", Params: tektonv1.Params{
		{Name: "name", Value: *tektonv1.NewStructuredValues(name)},
		{Name: "bundle", Value: *tektonv1.NewStructuredValues(fmt.Sprintf("quay.io/konflux-ci/tekton-catalog/%s-%s:0.4@%s", kind, name, digestOf(kind, name)))},
		{Name: "kind", Value: *tektonv1.NewStructuredValues(kind)},
	}}
}

func param(name, value string) tektonv1.Param {
	return tektonv1.Param{Name: name, Value: *tektonv1.NewStructuredValues(value)}
}

// scalePipelineSpec is the resolved pipeline Tekton copies into status.pipelineSpec
// (and a nudge run embeds in its spec): scaleTasks bundle-resolved tasks with their
// params, workspaces and when expressions, and the pipeline's described params.
func scalePipelineSpec() *tektonv1.PipelineSpec {
	ps := &tektonv1.PipelineSpec{Description: "This pipeline is ideal for building multi-arch container images from a Containerfile while maintaining trust after pipeline customization.\n\n_Uses `buildah` to create a multi-platform container image leveraging trusted artifacts. It also optionally creates a source image and runs some build-time tests._"}
	for p := 0; p < 16; p++ {
		ps.Params = append(ps.Params, tektonv1.ParamSpec{Name: fmt.Sprintf("pipeline-param-%d", p), Type: tektonv1.ParamTypeString,
			Description: "Path to a file with build arguments, see https://www.mankier.com/1/buildah-build#--build-arg-file; only used when the build is hermetic",
			Default:     tektonv1.NewStructuredValues(fmt.Sprintf("default-%d", p))})
	}
	ps.Workspaces = []tektonv1.PipelineWorkspaceDeclaration{{Name: "git-auth", Optional: true}, {Name: "netrc", Optional: true}}
	for t := 0; t < scaleTasks; t++ {
		name := fmt.Sprintf("task-%d", t)
		task := tektonv1.PipelineTask{Name: name, TaskRef: &tektonv1.TaskRef{ResolverRef: bundleRef("task", name)},
			Workspaces: []tektonv1.WorkspacePipelineTaskBinding{{Name: "basic-auth", Workspace: "git-auth"}, {Name: "netrc", Workspace: "netrc"}},
			When:       tektonv1.WhenExpressions{{Input: "$(params.skip-checks)", Operator: "in", Values: []string{"false"}}}}
		if t > 0 {
			task.RunAfter = []string{fmt.Sprintf("task-%d", t-1)}
		}
		for p := 0; p < 6; p++ {
			task.Params = append(task.Params, param(fmt.Sprintf("TASK_PARAM_%d", p), fmt.Sprintf("$(tasks.task-%d.results.SOURCE_ARTIFACT)", max(t-1, 0))))
		}
		ps.Tasks = append(ps.Tasks, task)
	}
	ps.Finally = []tektonv1.PipelineTask{{Name: "show-sbom", TaskRef: &tektonv1.TaskRef{ResolverRef: bundleRef("task", "show-sbom")},
		Params: tektonv1.Params{param("IMAGE_URL", "$(tasks.build-image-index.results.IMAGE_URL)")}}}
	ps.Results = []tektonv1.PipelineResult{
		{Name: konflux.ResultImageURL, Value: *tektonv1.NewStructuredValues("$(tasks.build-image-index.results.IMAGE_URL)")},
		{Name: konflux.ResultImageDigest, Value: *tektonv1.NewStructuredValues("$(tasks.build-image-index.results.IMAGE_DIGEST)")},
		{Name: "CHAINS-GIT_URL", Value: *tektonv1.NewStructuredValues("$(tasks.clone-repository.results.url)")},
		{Name: "CHAINS-GIT_COMMIT", Value: *tektonv1.NewStructuredValues("$(tasks.clone-repository.results.commit)")},
	}
	return ps
}

// scaleRun is the i-th PipelineRun of the measure, with the status Tekton writes
// once it finished (written with UpdateStatus: status is a subresource).
func scaleRun(i int, pipelineSpec *tektonv1.PipelineSpec) *tektonv1.PipelineRun {
	kind, ns := scaleKindOf(i), scaleNamespace(i)
	component := fmt.Sprintf("component-%d", (i/scaleNamespaces)%40)
	sha := fmt.Sprintf("%040x", i)
	repo := "https://github.com/konflux-tenant/" + component
	plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns,
		Labels: map[string]string{
			"appstudio.openshift.io/application":        "application-" + ns,
			"appstudio.openshift.io/component":          component,
			"pipelinesascode.tekton.dev/sha":            sha,
			"pipelinesascode.tekton.dev/url-org":        "konflux-tenant",
			"pipelinesascode.tekton.dev/url-repository": component,
			"pipelinesascode.tekton.dev/repository":     component,
			"tekton.dev/pipeline":                       "docker-build-oci-ta",
		},
		Annotations: map[string]string{
			"build.appstudio.openshift.io/repo":            repo + "?rev=" + sha,
			"build.appstudio.redhat.com/commit_sha":        sha,
			"build.appstudio.redhat.com/target_branch":     "main",
			"pipelinesascode.tekton.dev/on-cel-expression": `event == "push" && target_branch == "main" && ( "Containerfile".pathChanged() || ".tekton/***".pathChanged() || "src/***".pathChanged() )`,
			"pipelinesascode.tekton.dev/max-keep-runs":     "3",
			"pipelinesascode.tekton.dev/log-url":           "https://konflux-ui.apps.example.com/ns/" + ns + "/pipelinerun/" + sha,
			"pipelinesascode.tekton.dev/sha-title":         "chore(deps): update konflux references to the latest digests",
			"pipelinesascode.tekton.dev/sha-url":           repo + "/commit/" + sha,
			"pipelinesascode.tekton.dev/git-provider":      "github",
			"pipelinesascode.tekton.dev/installation-id":   "51234567",
			"pipelinesascode.tekton.dev/sender":            "renovate[bot]",
			"chains.tekton.dev/signed":                     "true",
			"results.tekton.dev/record":                    ns + "/results/" + sha[:8] + "/records/" + sha[8:16],
			"results.tekton.dev/result":                    ns + "/results/" + sha[:8],
			"pipelinesascode.tekton.dev/check-run-id":      "31234567890",
			"pipelinesascode.tekton.dev/controller-info":   `{"name":"default","configmap":"pipelines-as-code","secret":"pipelines-as-code-secret", "gRepo":"pipelines-as-code"}`,
		}},
		Spec: tektonv1.PipelineRunSpec{
			PipelineRef: &tektonv1.PipelineRef{ResolverRef: bundleRef("pipeline", "docker-build-oci-ta")},
			Params: tektonv1.Params{param("git-url", repo), param("revision", sha),
				param("output-image", "quay.io/redhat-user-workloads/"+ns+"/"+component+":"+sha),
				param("image-expires-after", ""), param("dockerfile", "Containerfile"), param("path-context", "."),
				param("build-source-image", "true"), param("hermetic", "true"), param("prefetch-input", `[{"type": "gomod", "path": "."}, {"type": "rpm", "path": "."}]`)},
			Workspaces:      []tektonv1.WorkspaceBinding{{Name: "git-auth", Secret: &corev1.SecretVolumeSource{SecretName: "{{ git_auth_secret }}"}}},
			TaskRunTemplate: tektonv1.PipelineTaskRunTemplate{ServiceAccountName: "build-pipeline-" + component},
			Timeouts:        &tektonv1.TimeoutFields{Pipeline: &metav1.Duration{Duration: 2 * time.Hour}},
		},
	}
	switch kind {
	case scalePushBuild, scalePRBuild:
		plr.GenerateName = component + "-on-push-"
		plr.Labels[konflux.LabelPipelineType] = "build"
		plr.Annotations[konflux.AnnotationEventType] = "push"
		plr.Labels[konflux.AnnotationEventType] = "push"
		if kind == scalePRBuild {
			plr.GenerateName = component + "-on-pull-request-"
			plr.Annotations[konflux.AnnotationEventType], plr.Labels[konflux.AnnotationEventType] = "pull_request", "pull_request"
			plr.Annotations["pipelinesascode.tekton.dev/pull-request"] = fmt.Sprint(i%500 + 1)
			plr.Labels["pipelinesascode.tekton.dev/pull-request"] = fmt.Sprint(i%500 + 1)
		}
	case scaleNudge:
		// build-service's Renovate run: its whole pipeline embedded in the spec.
		plr.GenerateName = "renovate-pipeline-"
		plr.Labels[konflux.LabelNudgeType] = konflux.NudgeTypeValue
		plr.Annotations[konflux.AnnotationNudging] = component
		plr.Annotations[konflux.AnnotationNudged] = "bundle-" + component + " operator-" + component
		plr.Annotations[konflux.AnnotationNudgingImg] = "quay.io/redhat-user-workloads/" + ns + "/" + component + ":" + sha
		plr.Annotations["build.appstudio.redhat.com/nudging-pipeline"] = component + "-on-push-" + sha[:5]
		plr.Spec.PipelineRef, plr.Spec.PipelineSpec = nil, pipelineSpec
	case scaleTest:
		plr.GenerateName = "application-" + ns + "-enterprise-contract-"
		plr.Labels[konflux.LabelPipelineType] = "test"
		plr.Labels["test.appstudio.openshift.io/scenario"] = "enterprise-contract"
		plr.Labels["appstudio.openshift.io/snapshot"] = "application-" + ns + "-" + sha[:5]
		plr.Labels["test.appstudio.openshift.io/type"] = "component"
		plr.Annotations["test.appstudio.openshift.io/pipelinerunstarttime"] = "1767225600"
	case scaleRelease:
		plr.GenerateName = "managed-"
		plr.Labels["release.appstudio.openshift.io/name"] = "release-" + sha[:8]
		plr.Labels["release.appstudio.openshift.io/namespace"] = ns
		plr.Labels["pipelines.appstudio.openshift.io/type"] = "managed"
	}
	return plr
}

// finishScaleRun writes the status Tekton leaves on a finished run.
func finishScaleRun(plr *tektonv1.PipelineRun, i int, pipelineSpec *tektonv1.PipelineSpec) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
	started, finished := metav1.NewTime(t0), metav1.NewTime(t0.Add(12*time.Minute))
	st := &plr.Status
	st.StartTime, st.CompletionTime = &started, &finished
	st.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: "Succeeded",
		Message:            fmt.Sprintf("Tasks Completed: %d (Failed: 0, Cancelled 0), Skipped: 2", scaleTasks+1),
		LastTransitionTime: apis.VolatileTime{Inner: finished}}}
	st.PipelineSpec = pipelineSpec
	for t := 0; t < scaleTasks+1; t++ {
		st.ChildReferences = append(st.ChildReferences, tektonv1.ChildStatusReference{
			TypeMeta:         runtimeTaskRun,
			Name:             fmt.Sprintf("%s-task-%d", plr.Name, t),
			PipelineTaskName: fmt.Sprintf("task-%d", t),
		})
	}
	image := fmt.Sprintf("quay.io/redhat-user-workloads/%s/%s", plr.Namespace, plr.Labels["appstudio.openshift.io/component"])
	st.Results = []tektonv1.PipelineRunResult{
		{Name: konflux.ResultImageURL, Value: *tektonv1.NewStructuredValues(image + ":" + plr.Labels["pipelinesascode.tekton.dev/sha"])},
		{Name: konflux.ResultImageDigest, Value: *tektonv1.NewStructuredValues(digestOf(plr.Namespace, plr.Name))},
		{Name: "CHAINS-GIT_URL", Value: *tektonv1.NewStructuredValues("https://github.com/konflux-tenant/" + plr.Labels["appstudio.openshift.io/component"])},
		{Name: "CHAINS-GIT_COMMIT", Value: *tektonv1.NewStructuredValues(plr.Labels["pipelinesascode.tekton.dev/sha"])},
	}
	st.Provenance = &tektonv1.Provenance{RefSource: &tektonv1.RefSource{URI: "quay.io/konflux-ci/tekton-catalog/pipeline-docker-build-oci-ta",
		Digest: map[string]string{"sha256": digestOf("pipeline")[len("sha256:"):]}, EntryPoint: "docker-build-oci-ta"}}
}

var runtimeTaskRun = runtime.TypeMeta{APIVersion: "tekton.dev/v1", Kind: "TaskRun"}
