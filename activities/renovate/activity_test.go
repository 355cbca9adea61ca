package renovate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"knative.dev/pkg/apis"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/nudgeflow/nudgeflow/activities/renovate/renovatetest"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/renovateapi"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/ownership/ownershiptest"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

const (
	unitToken    = "ghp-unit-git-token"
	unitRegistry = "unit-registry-password"
	unitCA       = "-----BEGIN CERTIFICATE-----\nunit\n-----END CERTIFICATE-----\n"
)

type unitWorld struct {
	t    *testing.T
	kube ctrlclient.Client
	logs *logBuffer
	env  *testsuite.TestActivityEnvironment
	a    *Activities
}

// newUnitWorld is a fake cluster with a nudging component "operand" (image
// quay.io/org/operand) and a nudged "bundle" on GitHub Enterprise, plus objs.
func newUnitWorld(t *testing.T, operatorNamespace string, objs ...ctrlclient.Object) *unitWorld {
	return newInterceptedWorld(t, interceptor.Funcs{}, operatorNamespace, objs...)
}

// newInterceptedWorld is newUnitWorld with the fake API server's answers changed by funcs.
func newInterceptedWorld(t *testing.T, funcs interceptor.Funcs, operatorNamespace string, objs ...ctrlclient.Object) *unitWorld {
	base := []ctrlclient.Object{
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "operand", Namespace: "tenant"},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "operand", ContainerImage: "quay.io/org/operand"}},
		&mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "bundle", Namespace: "tenant"},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: "bundle", Source: mirrorv1alpha1.ComponentSource{
				GitSource: &mirrorv1alpha1.GitSource{URL: "https://github.example.com/org/bundle", Revision: "main"}}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scm", Namespace: "tenant", Labels: map[string]string{
			credentials.LabelCredentials: credentials.LabelCredentialsSCM, credentials.LabelSCMHost: "github.example.com"}},
			Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"username": []byte("bot"), "password": []byte(unitToken)}},
	}
	all := append(base, objs...)
	// Every Component given is onboarded, as build-service onboards it: its
	// namespace owns its repository. A test that needs an unowned one creates it
	// later, through u.kube.
	onboarded := map[string]bool{}
	for _, o := range all {
		if c, ok := o.(*mirrorv1alpha1.Component); ok && c.Spec.Source.GitSource != nil {
			r := ownershiptest.Repository(c.Namespace, c.Spec.Source.GitSource.URL)
			// A day ago: a fake API server stamps no creationTimestamp.
			r.CreationTimestamp = metav1.NewTime(time.Now().Add(-24 * time.Hour).Truncate(time.Second))
			if !onboarded[r.Namespace+"/"+r.Name] {
				onboarded[r.Namespace+"/"+r.Name] = true
				all = append(all, r)
			}
		}
	}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(all...).WithInterceptorFuncs(funcs).Build()
	logs := &logBuffer{}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	env := suite.NewTestActivityEnvironment()
	a := &Activities{Kube: c, OperatorNamespace: operatorNamespace}
	env.RegisterActivity(a)
	return &unitWorld{t: t, kube: c, logs: logs, env: env, a: a}
}

func (u *unitWorld) launch(req renovateapi.LaunchRequest) renovateapi.LaunchResult {
	u.t.Helper()
	v, err := u.env.ExecuteActivity(u.a.LaunchRenovate, req)
	require.NoError(u.t, err)
	var res renovateapi.LaunchResult
	require.NoError(u.t, v.Get(&res))
	return res
}

func unitRequest(name string) renovateapi.LaunchRequest {
	return renovateapi.LaunchRequest{Namespace: "tenant", Name: name, WorkflowID: "nudge/tenant/uid/bundle", Attempt: 1, Nudging: "operand", Nudged: "bundle", Build: imagebuild.Build{ImageURL: "quay.io/org/operand:rev1", Digest: "sha256:" + strings.Repeat("1", 64), BuildPipelineRun: "operand-on-push", RepoAtSHA: "https://github.example.com/org/operand?rev=" + strings.Repeat("a", 40)}}
}

// created reads what the launch wrote: the run, its config and its Secret.
func (u *unitWorld) created(name string) (*tektonv1.PipelineRun, Config, []byte, *corev1.Secret) {
	return u.createdFor(name, "bundle")
}

// createdFor is created for a run that nudges nudged.
func (u *unitWorld) createdFor(name, nudged string) (*tektonv1.PipelineRun, Config, []byte, *corev1.Secret) {
	u.t.Helper()
	ctx := context.Background()
	plr := &tektonv1.PipelineRun{}
	require.NoError(u.t, u.kube.Get(ctx, ctrlclient.ObjectKey{Namespace: "tenant", Name: name}, plr))
	var cm corev1.ConfigMap
	require.NoError(u.t, u.kube.Get(ctx, ctrlclient.ObjectKey{Namespace: "tenant", Name: name}, &cm))
	raw := []byte(cm.Data[nudged+".json"])
	var cfg Config
	require.NoError(u.t, json.Unmarshal(raw, &cfg))
	var secret corev1.Secret
	require.NoError(u.t, u.kube.Get(ctx, ctrlclient.ObjectKey{Namespace: "tenant", Name: name}, &secret))
	return plr, cfg, raw, &secret
}

// secretValue reads a key of the fake client's Secret (it keeps StringData as written).
func secretValue(s *corev1.Secret, key string) string {
	if v, ok := s.Data[key]; ok {
		return string(v)
	}
	return s.StringData[key]
}

func pullSecret(name, config string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant"},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(config)}}
}

func admission(ns, name, origin, data string) *mirrorv1alpha1.ReleasePlanAdmission {
	return &mirrorv1alpha1.ReleasePlanAdmission{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: mirrorv1alpha1.ReleasePlanAdmissionSpec{Origin: origin, Data: &runtime.RawExtension{Raw: []byte(data)}}}
}

// Every build-service field: registry aliases from the ReleasePlanAdmissions, host
// rules from the linked pull secret (only in the Secret), the trusted CA bundle
// mounted from an owned copy, the GitHub Enterprise endpoint, debug logs. A retry
// creates nothing new. The generated config with its host rules passes Renovate's
// validator.
func TestLaunchRenovateMatchesBuildService(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("org+robot:" + unitRegistry))
	u := newUnitWorld(t, "nudgeflow",
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "build-pipeline-operand", Namespace: "tenant"},
			Secrets: []corev1.ObjectReference{{Name: "pull"}, {Name: "scm"}}},
		pullSecret("pull", fmt.Sprintf(`{"auths":{"quay.io":{"username":"wide","password":"wide-pass"},"quay.io/org/operand":{"auth":%q}}}`, auth)),
		admission("managed", "prod", "tenant", `{"mapping":{"components":[{"name":"operand","repositories":[{"url":"quay.io/redhat-prod/org----operand"}]}]}}`),
		admission("managed", "broken", "tenant", `{"mapping":{"components":"not a list"}}`),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "trusted-ca", Namespace: "nudgeflow",
			Labels: map[string]string{LabelInjectTrustedCABundle: "true"}}, Data: map[string]string{CABundleKey: unitCA}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a-not-labelled", Namespace: "nudgeflow"},
			Data: map[string]string{CABundleKey: "not this one"}},
	)
	name := renovateapi.RunName("nudge/tenant/uid/bundle", 1)
	require.True(t, u.launch(unitRequest(name)).Created)
	plr, cfg, raw, secret := u.created(name)

	// integration-service's nudge run carries one label and five annotations
	// (tekton/nudging/nudge_pipeline.go at 2ae2878): the same, in both ADR 69 forms
	// (appstudio and konflux-ci.dev), plus nudgeflow's own keys, and no label
	// build-service or integration-service classify runs by.
	require.Equal(t, map[string]string{LabelType: LabelTypeNudge, konflux.NudgeTypeKey.New: LabelTypeNudge,
		LabelManagedBy: ManagedByNudgeflow}, plr.Labels)
	for key, want := range map[konflux.Key]string{konflux.NudgedKey: "bundle", konflux.NudgingKey: "operand",
		konflux.NudgingImageKey: "quay.io/org/operand:rev1", konflux.NudgingPipelineKey: "operand-on-push"} {
		for _, form := range key.Forms() {
			require.Equal(t, want, plr.Annotations[form], form)
		}
	}
	require.Contains(t, plr.Annotations, AnnotationNudgingCommit)
	require.Contains(t, plr.Annotations, konflux.NudgingCommitKey.New)

	require.Equal(t, "https://github.example.com/api/v3/", cfg.Endpoint)
	require.Equal(t, map[string]string{
		"quay.io/redhat-prod/org----operand": "quay.io/org/operand",
		"registry.redhat.io/org/operand":     "quay.io/org/operand",
	}, cfg.RegistryAliases)
	require.Equal(t, []string{
		`quay\.io/org/operand(:.*)?@(?<currentDigest>sha256:[a-f0-9]+)`,
		`quay\.io/redhat-prod/org----operand(:.*)?@(?<currentDigest>sha256:[a-f0-9]+)`,
		`registry\.redhat\.io/org/operand(:.*)?@(?<currentDigest>sha256:[a-f0-9]+)`,
	}, cfg.CustomManagers[0].MatchStrings)

	var rules []HostRule
	require.NoError(t, json.Unmarshal([]byte(secretValue(secret, hostRulesKey)), &rules))
	require.Equal(t, []HostRule{{MatchHost: "quay.io", Username: "org+robot", Password: unitRegistry}}, rules,
		"the exact repository's credential wins over the registry-wide one")
	require.Equal(t, unitToken, secretValue(secret, tokenKey))
	step := plr.Spec.PipelineSpec.Tasks[0].TaskSpec.Steps[0]
	require.Contains(t, step.Command[2], `RENOVATE_HOST_RULES="$TOKEN_host_rules"`)
	require.Contains(t, step.Command[2], `RENOVATE_TOKEN=$TOKEN_token_0`)
	require.Equal(t, []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}}, step.Env)
	plrJSON, err := json.Marshal(plr)
	require.NoError(t, err)
	for _, secretText := range []string{unitRegistry, unitToken, "org+robot"} {
		require.NotContains(t, string(plrJSON), secretText)
		require.NotContains(t, string(raw), secretText)
	}

	var ca corev1.ConfigMap
	require.NoError(t, u.kube.Get(context.Background(), ctrlclient.ObjectKey{Namespace: "tenant", Name: CAConfigMapName(name)}, &ca))
	require.Equal(t, "renovate-ca-"+strings.TrimPrefix(name, "renovate-nudge-"), ca.Name)
	require.Equal(t, map[string]string{CABundleKey: unitCA}, ca.Data)
	require.Equal(t, name, ca.OwnerReferences[0].Name)
	require.Contains(t, step.VolumeMounts, corev1.VolumeMount{Name: caVolumeName, MountPath: CAMountPath, SubPath: caFileName, ReadOnly: true})
	require.True(t, mountsTrustedCA(plr))

	logs := u.logs.String()
	require.Contains(t, logs, "skipped a ReleasePlanAdmission", "a broken admission is logged")
	require.Contains(t, logs, "managed/broken")
	for _, secretText := range []string{unitRegistry, unitToken, "wide-pass"} {
		require.NotContains(t, logs, secretText)
	}

	// A retried activity finds everything in place, even once the operator's
	// bundle is gone: the run's copy exists.
	require.False(t, u.launch(unitRequest(name)).Created)
	ctx := context.Background()
	require.NoError(t, u.kube.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "trusted-ca", Namespace: "nudgeflow"}}))
	require.False(t, u.launch(unitRequest(name)).Created)
	// Without the copy either, the run could never start: the launch says so.
	require.NoError(t, u.kube.Delete(ctx, &ca))
	_, err = u.env.ExecuteActivity(u.a.LaunchRenovate, unitRequest(name))
	require.ErrorContains(t, err, "mounts the trusted CA bundle")

	withRules, err := renovatetest.WithHostRules(raw, []byte(secretValue(secret, hostRulesKey)))
	require.NoError(t, err)
	vctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	_, err = renovatetest.Validate(vctx, map[string][]byte{"unit-launch": withRules})
	require.NoError(t, err)
}

// No pull credentials, no operator namespace: Renovate runs without host rules
// and without a CA mount, and says why in the logs. A request that carries
// distribution repositories (an old history) keeps them.
func TestLaunchRenovateWithoutRegistryCredentialsOrCA(t *testing.T) {
	u := newUnitWorld(t, "",
		admission("managed", "prod", "tenant", `{"mapping":{"components":[{"name":"operand","repositories":[{"url":"quay.io/redhat-prod/org----operand"}]}]}}`))
	name := renovateapi.RunName("nudge/tenant/uid/bundle", 2)
	req := unitRequest(name)
	req.DistributionRepos = []string{"registry.example.com/org/operand"}
	u.launch(req)
	plr, cfg, _, secret := u.created(name)
	require.Equal(t, map[string]string{"registry.example.com/org/operand": "quay.io/org/operand"}, cfg.RegistryAliases,
		"the request's repositories override the lookup")
	require.Empty(t, secretValue(secret, hostRulesKey))
	step := plr.Spec.PipelineSpec.Tasks[0].TaskSpec.Steps[0]
	require.NotContains(t, step.Command[2], "RENOVATE_HOST_RULES")
	require.False(t, mountsTrustedCA(plr))
	require.Len(t, step.VolumeMounts, 1)
	require.Contains(t, u.logs.String(), "no image registry credentials for the nudging component")
	require.Contains(t, u.logs.String(), "build-pipeline-operand does not exist")
}

// The launch releases the run it created pending, but never one the bridge's
// interceptor held at admission: such a run is pending only because a webhook
// called after the interceptor (tekton-kueue's) re-pended it, the interceptor's
// reinvocation having failed open. A retried launch finds the run as the API
// server stored it then; an unheld pending run of the same Nudge is released.
func TestLaunchDoesNotReleaseAHeldRun(t *testing.T) {
	for _, c := range []struct {
		name        string
		annotations map[string]string
		labels      map[string]string
		want        tektonv1.PipelineRunSpecStatus
	}{
		{"held by a ChangeGroup, re-pended by tekton-kueue", map[string]string{
			konflux.AnnotationHeldBy: "bundle=g", konflux.AnnotationCancelReason: "cancelled by ChangeGroup g"}, nil, tektonv1.PipelineRunSpecStatusPending},
		{"queued by tekton-kueue: Kueue admits it", nil, map[string]string{LabelKueueQueue: "pipelines-queue"}, tektonv1.PipelineRunSpecStatusPending},
		{"not held", nil, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := renovateapi.RunName("nudge/tenant/uid/bundle", 1)
			req := unitRequest(name)
			stored := (&Activities{}).pipelineRun(req, false, false)
			for k, v := range c.annotations {
				stored.Annotations[k] = v
			}
			for k, v := range c.labels {
				stored.Labels[k] = v
			}
			stored.Spec.Status = tektonv1.PipelineRunSpecStatusPending
			u := newUnitWorld(t, "", stored)
			res := u.launch(req)
			require.False(t, res.Created, "the retry keeps the run the first attempt created")
			plr, _, _, _ := u.created(name)
			require.Equal(t, c.want, plr.Spec.Status)
		})
	}
}

// The command build-service runs, with the host rules named, never written.
func TestRenovateCommand(t *testing.T) {
	require.Equal(t, "RENOVATE_X_GITLAB_MERGE_REQUEST_DELAY=5000 RENOVATE_X_GITLAB_AUTO_MERGEABLE_CHECK_ATTEMPS=11 "+
		"RENOVATE_PR_HOURLY_LIMIT=0 RENOVATE_PR_CONCURRENT_LIMIT=0 RENOVATE_TOKEN=$TOKEN_token_0 RENOVATE_CONFIG_FILE=/configs/bundle.json "+
		`RENOVATE_HOST_RULES="$TOKEN_host_rules" renovate`, renovateCommand("bundle", true))
	require.NotContains(t, renovateCommand("bundle", false), "RENOVATE_HOST_RULES")
}

// A run a ChangeGroup held at admission has not ended for its Nudge workflow until
// the bridge has written where its build went, whatever Tekton's condition says.
func TestStatusOfHeldRun(t *testing.T) {
	cancelled := func(annotations map[string]string) *tektonv1.PipelineRun {
		plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "r", Annotations: annotations}}
		plr.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionFalse, Reason: "Cancelled"})
		return plr
	}
	held := map[string]string{konflux.AnnotationHeldBy: "bundle=bundle-update"}
	require.False(t, renovaterun.StatusOf(cancelled(held)).Done, "undecided: the workflow waits")

	held[konflux.AnnotationHeldOutcome] = konflux.HeldOutcomeDeliveredPrefix + "bundle-update"
	s := renovaterun.StatusOf(cancelled(held))
	require.True(t, s.Done)
	require.False(t, s.Succeeded)
	require.Equal(t, "bundle-update", s.HeldBy)
	require.Equal(t, renovaterun.ReasonHeldByChangeGroup, s.Reason)

	returned := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "r", Annotations: map[string]string{
		konflux.AnnotationHeldBy: "bundle=bundle-update", konflux.AnnotationHeldOutcome: konflux.HeldOutcomeReturned}}}
	s = renovaterun.StatusOf(returned)
	require.True(t, s.Done, "returned: done even before Tekton marks it cancelled")
	require.False(t, s.Succeeded)
	require.Empty(t, s.HeldBy)
	require.Equal(t, renovaterun.ReasonHeldReturned, s.Reason)

	s = renovaterun.StatusOf(cancelled(nil))
	require.True(t, s.Done, "a run nobody held ends with its condition")
	require.Equal(t, "Cancelled", s.Reason)
	require.True(t, s.Cancelled, "someone else cancelled it")
	require.False(t, renovaterun.StatusOf(cancelled(held)).Cancelled, "a held run is the group's, not a person's cancel")
}

// A run ends cancelled when its spec.status asked it to stop (a person with tkn or
// the console) or Tekton's reason says so; a failure or a timeout is not a cancel,
// and neither is a success.
func TestStatusOfCancelledRun(t *testing.T) {
	run := func(specStatus tektonv1.PipelineRunSpecStatus, ok corev1.ConditionStatus, reason string) renovaterun.RunStatus {
		plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: tektonv1.PipelineRunSpec{Status: specStatus}}
		plr.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: ok, Reason: reason})
		return renovaterun.StatusOf(plr)
	}
	for _, tc := range []struct {
		name       string
		specStatus tektonv1.PipelineRunSpecStatus
		ok         corev1.ConditionStatus
		reason     string
		cancelled  bool
	}{
		{"cancelled", tektonv1.PipelineRunSpecStatusCancelled, corev1.ConditionFalse, "Cancelled", true},
		{"cancelled, finally ran", tektonv1.PipelineRunSpecStatusCancelledRunFinally, corev1.ConditionFalse, "Cancelled", true},
		{"stopped, finally ran and failed", tektonv1.PipelineRunSpecStatusStoppedRunFinally, corev1.ConditionFalse, "Failed", true},
		{"Tekton's reason only", "", corev1.ConditionFalse, "Cancelled", true},
		{"failed", "", corev1.ConditionFalse, "Failed", false},
		{"timed out", "", corev1.ConditionFalse, "PipelineRunTimeout", false},
		{"succeeded", tektonv1.PipelineRunSpecStatusStoppedRunFinally, corev1.ConditionTrue, "Succeeded", false},
	} {
		s := run(tc.specStatus, tc.ok, tc.reason)
		require.True(t, s.Done, tc.name)
		require.Equal(t, tc.cancelled, s.Cancelled, tc.name)
	}
	pending := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: tektonv1.PipelineRunSpec{Status: tektonv1.PipelineRunSpecStatusCancelled}}
	require.False(t, renovaterun.StatusOf(pending).Done, "asked to stop, not stopped yet: the run has not ended")
}

// A launch that cannot release its run deletes it, so no run stays pending: a
// refused write (Forbidden, Invalid) fails for good, anything else is retried and
// the retry creates the run again; a run the launch cannot delete either stays, and
// the error says so. (test/nudges and test/deploy show the same against a real API
// server.)
func TestLaunchThatCannotReleaseDeletesTheRun(t *testing.T) {
	configmaps := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		name string
		// fail answers the launch's writes; nil lets them through.
		fail         func(verb string, obj ctrlclient.Object) error
		retryable    bool
		runRemains   bool
		errorNames   []string
		errorLacking string
	}{
		{
			name: "ConfigMap forbidden",
			fail: func(verb string, obj ctrlclient.Object) error {
				if _, ok := obj.(*corev1.ConfigMap); ok && verb == "create" {
					return apierrors.NewForbidden(configmaps, obj.GetName(), errors.New("denied by policy no-configmaps"))
				}
				return nil
			},
			errorNames: []string{"deleted the pending PipelineRun", "creating ConfigMap", "denied by policy no-configmaps"},
		},
		{
			name: "Secret invalid",
			fail: func(verb string, obj ctrlclient.Object) error {
				if _, ok := obj.(*corev1.Secret); ok && verb == "create" {
					return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Secret").GroupKind(), obj.GetName(), nil)
				}
				return nil
			},
			errorNames: []string{"deleted the pending PipelineRun", "creating Secret"},
		},
		{
			name: "Secret unavailable",
			fail: func(verb string, obj ctrlclient.Object) error {
				if _, ok := obj.(*corev1.Secret); ok && verb == "create" {
					return apierrors.NewServiceUnavailable("etcd is away")
				}
				return nil
			},
			retryable:  true,
			errorNames: []string{"deleted the pending PipelineRun", "creating Secret", "etcd is away"},
		},
		{
			name: "release fails",
			fail: func(verb string, obj ctrlclient.Object) error {
				if _, ok := obj.(*tektonv1.PipelineRun); ok && verb == "patch" {
					return apierrors.NewInternalError(errors.New("webhook unreachable"))
				}
				return nil
			},
			retryable:  true,
			errorNames: []string{"deleted the pending PipelineRun", "starting PipelineRun", "webhook unreachable"},
		},
		{
			name: "delete fails too",
			fail: func(verb string, obj ctrlclient.Object) error {
				switch obj.(type) {
				case *corev1.ConfigMap:
					if verb == "create" {
						return apierrors.NewForbidden(configmaps, obj.GetName(), errors.New("denied by policy no-configmaps"))
					}
				case *tektonv1.PipelineRun:
					if verb == "delete" {
						return apierrors.NewInternalError(errors.New("apiserver restarting"))
					}
				}
				return nil
			},
			retryable:    true,
			runRemains:   true,
			errorNames:   []string{"denied by policy no-configmaps", "stays pending until the launch is retried", "apiserver restarting"},
			errorLacking: "deleted the pending PipelineRun",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failing := true
			answer := func(verb string, obj ctrlclient.Object) error {
				if !failing {
					return nil
				}
				return tc.fail(verb, obj)
			}
			u := newInterceptedWorld(t, interceptor.Funcs{
				Create: func(ctx context.Context, c ctrlclient.WithWatch, obj ctrlclient.Object, opts ...ctrlclient.CreateOption) error {
					if err := answer("create", obj); err != nil {
						return err
					}
					return c.Create(ctx, obj, opts...)
				},
				Patch: func(ctx context.Context, c ctrlclient.WithWatch, obj ctrlclient.Object, patch ctrlclient.Patch, opts ...ctrlclient.PatchOption) error {
					if err := answer("patch", obj); err != nil {
						return err
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
				Delete: func(ctx context.Context, c ctrlclient.WithWatch, obj ctrlclient.Object, opts ...ctrlclient.DeleteOption) error {
					if err := answer("delete", obj); err != nil {
						return err
					}
					return c.Delete(ctx, obj, opts...)
				},
			}, "")
			name := renovateapi.RunName("nudge/tenant/uid/bundle", 1)
			_, err := u.env.ExecuteActivity(u.a.LaunchRenovate, unitRequest(name))
			require.Error(t, err)
			var appErr *temporal.ApplicationError
			require.ErrorAs(t, err, &appErr)
			require.Equal(t, tc.retryable, !appErr.NonRetryable(), "retryable: %v", err)
			if !tc.retryable {
				require.Equal(t, nonRetryableRefused, appErr.Type())
			}
			for _, part := range tc.errorNames {
				require.ErrorContains(t, err, part)
			}
			if tc.errorLacking != "" {
				require.NotContains(t, err.Error(), tc.errorLacking)
			}
			plr := &tektonv1.PipelineRun{}
			getErr := u.kube.Get(context.Background(), ctrlclient.ObjectKey{Namespace: "tenant", Name: name}, plr)
			if tc.runRemains {
				require.NoError(t, getErr)
				require.True(t, plr.IsPending(), "a run the launch could not delete stays pending, for the retry")
			} else {
				require.True(t, apierrors.IsNotFound(getErr), "the run is deleted: %v", getErr)
			}

			// Retried once the API server lets the writes through, the launch creates
			// (or keeps) the run and releases it.
			failing = false
			res := u.launch(unitRequest(name))
			require.Equal(t, !tc.runRemains, res.Created)
			got, _, _, _ := u.created(name)
			require.False(t, got.IsPending())
		})
	}
}

// logBuffer collects the log lines the activities write from several goroutines,
// for a test to read while it runs.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
