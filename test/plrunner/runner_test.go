package plrunner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	"github.com/nudgeflow/nudgeflow/internal/renovaterun"
)

// startWorld starts a kube-apiserver and a runner whose `renovate` is
// fakeRenovate (a bash script body).
func startWorld(t *testing.T, fakeRenovate string) (ctrlclient.WithWatch, string) {
	t.Helper()
	tools := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(tools, "renovate"), []byte("#!/bin/bash\n"+fakeRenovate), 0o755))
	return startRunner(t, tools)
}

// startRunner starts a World (kube-apiserver and runner) with toolPath first on
// the steps' PATH; it returns the client and the runner's state directory.
func startRunner(t *testing.T, toolPath string) (ctrlclient.WithWatch, string) {
	t.Helper()
	state := t.TempDir()
	w, err := StartWorld(state, toolPath)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, w.Stop()) })
	return w.Client, state
}

// nudgeRun is shaped like the run activities/renovate writes (newPipelineRun):
// a bash -c command line that calls `renovate` with the token from the run's
// Secret (envFrom, prefix TOKEN_) and the config from the /configs ConfigMap
// volume, the trusted-CA bundle mounted by subPath at renovate.CAMountPath,
// the outcome written to $(results.outcome.path) and surfaced as a pipeline
// result. It starts pending, as nudgeflow creates it.
func nudgeRun(ns, name string) *tektonv1.PipelineRun {
	return &tektonv1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{renovate.LabelType: renovate.LabelTypeNudge}},
		Spec: tektonv1.PipelineRunSpec{
			Status: tektonv1.PipelineRunSpecStatusPending,
			PipelineSpec: &tektonv1.PipelineSpec{
				Tasks: []tektonv1.PipelineTask{{Name: "renovate", TaskSpec: &tektonv1.EmbeddedTask{TaskSpec: tektonv1.TaskSpec{
					Steps: []tektonv1.Step{{
						Name: "renovate", Image: "quay.io/konflux-ci/mintmaker-renovate-image:latest",
						Command: []string{"bash", "-c", `RENOVATE_TOKEN=$TOKEN_token_0 RENOVATE_CONFIG_FILE=/configs/config.json renovate; ` +
							`rc=$?; printf %s ok > $(results.` + renovaterun.ResultOutcome + `.path); exit $rc`},
						EnvFrom: []corev1.EnvFromSource{{Prefix: "TOKEN_", SecretRef: &corev1.SecretEnvSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: name}}}},
						Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "configs", MountPath: "/configs"},
							{Name: "trusted-ca", MountPath: renovate.CAMountPath, SubPath: "tls-ca-bundle.pem", ReadOnly: true},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "configs", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: name}}}},
						{Name: "trusted-ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: name + "-ca"},
							Items:                []corev1.KeyToPath{{Key: "ca-bundle.crt", Path: "tls-ca-bundle.pem"}}}}},
					},
					Results: []tektonv1.TaskResult{{Name: renovaterun.ResultOutcome, Type: tektonv1.ResultsTypeString}},
				}}}},
				Results: []tektonv1.PipelineResult{{Name: renovaterun.ResultOutcome, Type: tektonv1.ResultsTypeString,
					Value: *tektonv1.NewStructuredValues("$(tasks.renovate.results." + renovaterun.ResultOutcome + ")")}},
			},
		},
	}
}

func createRunObjects(t *testing.T, c ctrlclient.Client, ns, name string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		StringData: map[string]string{"token_0": "s3cret"}}))
	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Data: map[string]string{"config.json": `{"platform":"gitea"}`}}))
	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-ca", Namespace: ns},
		Data: map[string]string{"ca-bundle.crt": "-----BEGIN CERTIFICATE-----test"}}))
	require.NoError(t, c.Create(ctx, nudgeRun(ns, name)))
}

func setSpecStatus(t *testing.T, c ctrlclient.Client, ns, name string, s tektonv1.PipelineRunSpecStatus) {
	t.Helper()
	require.NoError(t, patchSpecStatus(context.Background(), c, ns, name, s))
}

func succeeded(t *testing.T, c ctrlclient.Client, ns, name string) *apis.Condition {
	t.Helper()
	var plr tektonv1.PipelineRun
	require.NoError(t, c.Get(context.Background(), ctrlclient.ObjectKey{Namespace: ns, Name: name}, &plr))
	return plr.Status.GetCondition(apis.ConditionSucceeded)
}

func getRun(t *testing.T, c ctrlclient.Client, ns, name string) *tektonv1.PipelineRun {
	t.Helper()
	var plr tektonv1.PipelineRun
	require.NoError(t, c.Get(context.Background(), ctrlclient.ObjectKey{Namespace: ns, Name: name}, &plr))
	return &plr
}

func TestReleasedRunRunsItsStepLikeTekton(t *testing.T) {
	// The fake renovate prints what a real one would read: the token from the
	// Secret, the config file (rewritten from /configs), the CA Node would trust.
	c, state := startWorld(t, `echo "token=$RENOVATE_TOKEN log=$LOG_LEVEL"; echo "config=$(cat "$RENOVATE_CONFIG_FILE")"; echo "ca=$(cat "$NODE_EXTRA_CA_CERTS")"`)
	createRunObjects(t, c, "tenant", "nudge-1")

	// Pending: nudgeflow holds it; the runner must not start it. Consistently
	// checking a negative needs a window: the positive check below bounds it.
	require.Never(t, func() bool { return getRun(t, c, "tenant", "nudge-1").Status.StartTime != nil },
		2*time.Second, 100*time.Millisecond, "a pending run is not started")

	setSpecStatus(t, c, "tenant", "nudge-1", "")
	require.Eventually(t, func() bool {
		cond := succeeded(t, c, "tenant", "nudge-1")
		return cond != nil && cond.Status != corev1.ConditionUnknown
	}, time.Minute, 100*time.Millisecond)

	plr := getRun(t, c, "tenant", "nudge-1")
	cond := plr.Status.GetCondition(apis.ConditionSucceeded)
	log, _ := os.ReadFile(filepath.Join(state, "runs", "tenant", "nudge-1.log"))
	require.Equal(t, corev1.ConditionTrue, cond.Status, "condition %+v, log:\n%s", cond, log)
	require.Equal(t, ReasonSucceeded, cond.Reason)
	require.NotNil(t, plr.Status.StartTime)
	require.NotNil(t, plr.Status.CompletionTime)
	require.Len(t, plr.Status.ChildReferences, 1)
	require.Equal(t, "TaskRun", plr.Status.ChildReferences[0].Kind)
	require.Equal(t, "renovate", plr.Status.ChildReferences[0].PipelineTaskName)
	require.Equal(t, []tektonv1.PipelineRunResult{{Name: renovaterun.ResultOutcome, Value: *tektonv1.NewStructuredValues(renovaterun.OutcomeOK)}},
		plr.Status.Results)
	require.Contains(t, string(log), "token=s3cret log=debug")
	require.Contains(t, string(log), `config={"platform":"gitea"}`)
	require.Contains(t, string(log), "ca=-----BEGIN CERTIFICATE-----test")
	require.Equal(t, renovaterun.OutcomeOK, renovateOutcome(t, plr), "nudgeflow reads the outcome the runner wrote")
}

// renovateOutcome reads the run the way nudgeflow does.
func renovateOutcome(t *testing.T, plr *tektonv1.PipelineRun) string {
	t.Helper()
	s := renovaterun.StatusOf(plr)
	require.True(t, s.Done)
	require.True(t, s.Succeeded, "%+v", s)
	for _, r := range plr.Status.Results {
		if r.Name == renovaterun.ResultOutcome {
			return r.Value.StringVal
		}
	}
	return ""
}

func TestFailingStepFailsTheRun(t *testing.T) {
	c, _ := startWorld(t, `echo boom >&2; exit 3`)
	createRunObjects(t, c, "tenant", "nudge-fail")
	setSpecStatus(t, c, "tenant", "nudge-fail", "")
	require.Eventually(t, func() bool {
		cond := succeeded(t, c, "tenant", "nudge-fail")
		return cond != nil && cond.Status == corev1.ConditionFalse
	}, time.Minute, 100*time.Millisecond)
	cond := succeeded(t, c, "tenant", "nudge-fail")
	require.Equal(t, ReasonFailed, cond.Reason)
	require.Contains(t, cond.Message, "exit status 3")
}

func TestCancellingARunningRunKillsItsStep(t *testing.T) {
	// The fake renovate starts a child that would outlive a killed shell: the
	// whole process group has to go.
	c, state := startWorld(t, `sleep 600 & echo started; wait`)
	createRunObjects(t, c, "tenant", "nudge-long")
	setSpecStatus(t, c, "tenant", "nudge-long", "")
	logPath := filepath.Join(state, "runs", "tenant", "nudge-long.log")
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "started")
	}, time.Minute, 100*time.Millisecond, "the step is running")
	cond := succeeded(t, c, "tenant", "nudge-long")
	require.Equal(t, corev1.ConditionUnknown, cond.Status)
	require.Equal(t, ReasonRunning, cond.Reason)

	setSpecStatus(t, c, "tenant", "nudge-long", tektonv1.PipelineRunSpecStatusCancelled)
	require.Eventually(t, func() bool {
		cond := succeeded(t, c, "tenant", "nudge-long")
		return cond.Status == corev1.ConditionFalse
	}, time.Minute, 100*time.Millisecond)
	require.Equal(t, ReasonCancelled, succeeded(t, c, "tenant", "nudge-long").Reason)
	b, _ := os.ReadFile(logPath)
	require.Contains(t, string(b), "killed: the run was cancelled")
}

// nudgeflow writes platform forgejo, as build-service does; the pinned Renovate
// runs it as gitea, every other key as written.
func TestForgejoConfigRunsAsGitea(t *testing.T) {
	in := `{"platform":"forgejo","endpoint":"http://127.0.0.1:3000/api/v1/","labels":["konflux-nudge"]}`
	out, note := platformForPinned("consumer.json", []byte(in))
	require.JSONEq(t, `{"platform":"gitea","endpoint":"http://127.0.0.1:3000/api/v1/","labels":["konflux-nudge"]}`, string(out))
	require.Contains(t, note, `platform "forgejo" run as "gitea"`)

	for key, body := range map[string]string{
		"consumer.json": `{"platform":"github"}`,  // a platform the pinned Renovate has
		"ca-bundle.crt": `{"platform":"forgejo"}`, // not a config file
		"broken.json":   `{"platform":`,
	} {
		out, note := platformForPinned(key, []byte(body))
		require.Equal(t, body, string(out), key)
		require.Empty(t, note, key)
	}
}
