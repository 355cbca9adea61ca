package nudges

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/activities/renovate/renovatetest"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/contracts/nudgeapi"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
)

// Registry passwords the harness hands out; TestZZNoSecretInAnyHistory looks for
// them (and the forge token) in every history and in the worker's logs.
const (
	registryPassword     = "quay-robot-secret-password"
	wideRegistryPassword = "quay-wide-secret-password"
	trustedBundle        = "-----BEGIN CERTIFICATE-----\nMIIBnudgeflowtestbundle\n-----END CERTIFICATE-----\n"
)

// pullSecret links a kubernetes.io/dockerconfigjson Secret with auths to the
// component's build-pipeline-<component> ServiceAccount, as build-service sets
// image repositories up.
func (f *fixture) pullSecret(component, name string, auths map[string]any) {
	f.t.Helper()
	raw, err := json.Marshal(map[string]any{"auths": auths})
	require.NoError(f.t, err)
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: raw}})
	f.create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: credentials.BuildPipelineServiceAccount(component)},
		Secrets: []corev1.ObjectReference{{Name: name}, {Name: "not-there"}}})
}

// admission creates a ReleasePlanAdmission in managed whose origin is the test's
// namespace.
func (f *fixture) admission(managed, name, data string) {
	f.t.Helper()
	require.NoError(f.t, f.w.Kube.Create(f.ctx, &mirrorv1alpha1.ReleasePlanAdmission{
		ObjectMeta: metav1.ObjectMeta{Namespace: managed, Name: name},
		Spec:       mirrorv1alpha1.ReleasePlanAdmissionSpec{Origin: f.ns, Data: &runtime.RawExtension{Raw: []byte(data)}},
	}))
}

// trustedCA puts the cluster's CA bundle into the worker's namespace, labelled as
// OpenShift labels the ConfigMap it injects into, for the rest of the test.
func (f *fixture) trustedCA(bundle string) {
	f.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "trusted-ca-" + f.ns, Namespace: operatorNamespace,
		Labels: map[string]string{renovate.LabelInjectTrustedCABundle: "true"}},
		Data: map[string]string{renovate.CABundleKey: bundle}}
	require.NoError(f.t, f.w.Kube.Create(f.ctx, cm))
	f.t.Cleanup(func() { _ = f.w.Kube.Delete(context.Background(), cm) })
}

func step(plr tektonv1.PipelineRun) tektonv1.Step {
	return plr.Spec.PipelineSpec.Tasks[0].TaskSpec.Steps[0]
}

func (f *fixture) ownedSecret(plr tektonv1.PipelineRun) corev1.Secret {
	f.t.Helper()
	var s corev1.Secret
	require.NoError(f.t, f.w.Kube.Get(f.ctx, ctrlclient.ObjectKey{Namespace: f.ns, Name: plr.Name}, &s))
	return s
}

// noSecretIn fails when any of the harness's secrets is in what.
func noSecretIn(t *testing.T, what string, obj any) {
	t.Helper()
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	for _, s := range []string{token, registryPassword, wideRegistryPassword} {
		require.NotContains(t, string(raw), s, "%s holds a secret", what)
	}
}

func validateRenovateConfigs(t *testing.T, configs map[string][]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := renovatetest.Validate(ctx, configs)
	require.NoError(t, err)
}

// The Renovate run of a nudging component that is released and pushes to a private
// repository, on a cluster with a trusted CA bundle, matches build-service's:
// registryAliases and a matchString for each distribution repository of its
// ReleasePlanAdmissions (with registry.redhat.io's name of a redhat-prod
// repository); host rules from the pull secret linked to build-pipeline-<nudging>
// (the exact repository's, not the registry-wide one) only in the owned Secret,
// named by the command; the CA bundle copied into an owned ConfigMap and mounted
// where the image's trust store is. No secret is in the run, its ConfigMaps or the
// worker's logs, and the config Renovate runs with passes its validator.
func TestRenovateRunMatchesBuildService(t *testing.T) {
	f := newFixture(t)
	f.component("operand", "", nil)
	f.component("bundle", f.repoURL("gitlab.com", "bundle")+".git", nil)
	f.credentials("gitlab.com")
	f.nudgeConfig(immediate("operand", "bundle"))
	managed := f.w.Namespace(t)
	f.admission(managed, "prod", `{"mapping":{"components":[
		{"name":"operand","repositories":[{"url":"quay.io/redhat-prod/org----operand","tags":["latest"]},{"url":"registry.example.com/org/operand"}]},
		{"name":"bundle","repositories":[{"url":"quay.io/redhat-prod/org----bundle"}]}]}}`)
	f.admission(managed, "broken", `{"mapping":{"components":"not a list"}}`)
	f.pullSecret("operand", "operand-pull", map[string]any{
		"quay.io":             map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte("wide:" + wideRegistryPassword))},
		"quay.io/org/operand": map[string]string{"username": "org+nudge", "password": registryPassword},
	})
	f.trustedCA(trustedBundle)
	b := f.build("operand", 1, nil)

	plr := f.waitRuns(1)[0]
	cfg, raw := f.config(plr)
	require.Equal(t, map[string]string{
		"quay.io/redhat-prod/org----operand": "quay.io/org/operand",
		"registry.redhat.io/org/operand":     "quay.io/org/operand",
		"registry.example.com/org/operand":   "quay.io/org/operand",
	}, cfg.RegistryAliases)
	require.Equal(t, []string{
		`quay\.io/org/operand(:.*)?@(?<currentDigest>sha256:[a-f0-9]+)`,
		`quay\.io/redhat-prod/org----operand(:.*)?@(?<currentDigest>sha256:[a-f0-9]+)`,
		`registry\.redhat\.io/org/operand(:.*)?@(?<currentDigest>sha256:[a-f0-9]+)`,
		`registry\.example\.com/org/operand(:.*)?@(?<currentDigest>sha256:[a-f0-9]+)`,
	}, cfg.CustomManagers[0].MatchStrings)
	require.Equal(t, []string{"quay.io/org/operand", "quay.io/redhat-prod/org----operand", "registry.redhat.io/org/operand",
		"registry.example.com/org/operand"}, cfg.PackageRules[1].MatchPackageNames)
	require.True(t, logged("skipped a ReleasePlanAdmission", managed+"/broken"), "a broken admission is logged, the nudge goes on")

	secret := f.ownedSecret(plr)
	var rules []renovate.HostRule
	require.NoError(t, json.Unmarshal(secret.Data["host_rules"], &rules))
	require.Equal(t, []renovate.HostRule{{MatchHost: "quay.io", Username: "org+nudge", Password: registryPassword}}, rules)
	require.Equal(t, token, string(secret.Data["token_0"]))
	s := step(plr)
	require.Contains(t, s.Command[2], `RENOVATE_HOST_RULES="$TOKEN_host_rules"`)
	require.Equal(t, []corev1.EnvFromSource{{Prefix: "TOKEN_", SecretRef: &corev1.SecretEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: plr.Name}}}}, s.EnvFrom)
	require.Contains(t, s.Env, corev1.EnvVar{Name: "LOG_LEVEL", Value: "debug"})

	var ca corev1.ConfigMap
	require.NoError(t, f.w.Kube.Get(f.ctx, ctrlclient.ObjectKey{Namespace: f.ns, Name: renovate.CAConfigMapName(plr.Name)}, &ca))
	require.True(t, strings.HasPrefix(ca.Name, "renovate-ca-"))
	require.Equal(t, map[string]string{renovate.CABundleKey: trustedBundle}, ca.Data)
	require.Len(t, ca.OwnerReferences, 1)
	require.Equal(t, plr.UID, ca.OwnerReferences[0].UID, "the CA copy dies with the run")
	var caMount *corev1.VolumeMount
	for i, m := range s.VolumeMounts {
		if m.MountPath == renovate.CAMountPath {
			caMount = &s.VolumeMounts[i]
		}
	}
	require.NotNil(t, caMount, "the bundle is mounted at %s", renovate.CAMountPath)
	require.Equal(t, "tls-ca-bundle.pem", caMount.SubPath)
	var caVolume *corev1.Volume
	for i, v := range plr.Spec.PipelineSpec.Tasks[0].TaskSpec.Volumes {
		if v.Name == caMount.Name {
			caVolume = &plr.Spec.PipelineSpec.Tasks[0].TaskSpec.Volumes[i]
		}
	}
	require.NotNil(t, caVolume)
	require.Equal(t, ca.Name, caVolume.ConfigMap.Name)
	require.Equal(t, []corev1.KeyToPath{{Key: renovate.CABundleKey, Path: "tls-ca-bundle.pem"}}, caVolume.ConfigMap.Items)

	noSecretIn(t, "the PipelineRun", plr)
	var cm corev1.ConfigMap
	require.NoError(t, f.w.Kube.Get(f.ctx, ctrlclient.ObjectKey{Namespace: f.ns, Name: plr.Name}, &cm))
	noSecretIn(t, "the config ConfigMap", cm)
	noSecretIn(t, "the CA ConfigMap", ca)

	withRules, err := renovatetest.WithHostRules(raw, secret.Data["host_rules"])
	require.NoError(t, err)
	validateRenovateConfigs(t, map[string][]byte{"released-private-ca": raw, "released-private-ca-host-rules": withRules})

	f.finish(plr, true)
	var res nudgeapi.Result
	wfID := nudgeapi.WorkflowID(f.ns, string(b.UID), "bundle")
	require.NoError(t, f.w.TemporalClient.GetWorkflow(f.ctx, wfID, "").Get(f.ctx, &res))
	require.Equal(t, nudgeapi.PhaseSucceeded, res.Phase)
}

// Self-hosted forges get their own API roots: GitHub Enterprise /api/v3, a
// GitLab named by the git-provider annotation /api/v4. A nudging component with
// no linked pull secret still nudges (a public image needs none): no host rules,
// said in the logs. Without a CA bundle nothing is mounted.
func TestSelfHostedForgeEndpointsAndNoRegistryCredentials(t *testing.T) {
	f := newFixture(t)
	f.component("operand", "", nil)
	f.component("ghe", "https://github.example.com/org/ghe", nil)
	f.component("lab", "https://git.example.org/group/sub/lab.git", map[string]string{mirrorv1alpha1.AnnotationGitProvider: "gitlab"})
	f.credentials("github.example.com")
	f.credentials("git.example.org")
	f.nudgeConfig(immediate("operand", "ghe"), immediate("operand", "lab"))
	f.build("operand", 1, nil)

	configs := map[string][]byte{}
	byTarget := map[string]renovate.Config{}
	for _, r := range f.waitRuns(2) {
		target := r.Annotations[renovate.AnnotationNudgedComponents]
		c, raw := f.config(r)
		byTarget[target], configs[target] = c, raw
		require.NotContains(t, step(r).Command[2], "RENOVATE_HOST_RULES", "%s: no credentials, no host rules", target)
		require.NotContains(t, f.ownedSecret(r).Data, "host_rules")
		for _, m := range step(r).VolumeMounts {
			require.NotEqual(t, renovate.CAMountPath, m.MountPath, "no CA bundle, nothing mounted")
		}
		err := f.w.Kube.Get(f.ctx, ctrlclient.ObjectKey{Namespace: f.ns, Name: renovate.CAConfigMapName(r.Name)}, &corev1.ConfigMap{})
		require.True(t, ctrlclient.IgnoreNotFound(err) == nil && err != nil, "no CA ConfigMap: %v", err)
	}
	require.Equal(t, "github", byTarget["ghe"].Platform)
	require.Equal(t, "https://github.example.com/api/v3/", byTarget["ghe"].Endpoint)
	require.Equal(t, "gitlab", byTarget["lab"].Platform)
	require.Equal(t, "https://git.example.org/api/v4/", byTarget["lab"].Endpoint)
	require.Equal(t, "group/sub/lab", byTarget["lab"].Repositories[0].Repository)
	require.Empty(t, byTarget["ghe"].RegistryAliases, "no ReleasePlanAdmission, no aliases")
	require.True(t, logged("no image registry credentials", fmt.Sprintf("namespace=%s", f.ns), "build-pipeline-operand does not exist"),
		"the missing pull secret is explained")
	validateRenovateConfigs(t, configs)
}
