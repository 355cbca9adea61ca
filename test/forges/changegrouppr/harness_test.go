// Package pullrequest_test runs the ChangeGroup's pull request activities against the
// GitHub and GitLab emulators and a real Gitea server.
package changegrouppr_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nudgeflow/nudgeflow/activities/changegrouppr"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupprapi"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	"github.com/nudgeflow/nudgeflow/internal/ownership/ownershiptest"
)

// The forges' fixtures (GitHub emulator, GitLab emulator, real Forgejo server)
// share the nudged repository's content and the activity environment; only the
// forge, its credentials and the configured bot differ.

// bundleFiles is the nudged bundle repository: the CSV references the operator and
// both operands, the Dockerfile the operator, and README.md is outside fileMatch.
func bundleFiles() map[string]string {
	return map[string]string{
		"bundle/manifests/csv.yaml": "image: quay.io/org/op@" + old["op"] + "\nrelated: quay.io/org/operand-a:v1@" + old["a"] +
			"\nother: quay.io/org/operand-b@" + old["b"] + "\n",
		"Dockerfile": "FROM quay.io/org/op@" + old["op"] + "\n",
		"README.md":  "quay.io/org/op@" + old["op"] + "\n",
	}
}

// scmSecret is a forge's Konflux SCM basic-auth Secret in namespace tenant, for the
// loopback host every test forge listens on.
type scmSecret struct{ name, username, token string }

// activityRunner runs the pull request activities in a test activity environment.
type activityRunner struct {
	t   *testing.T
	env *testsuite.TestActivityEnvironment
	k8s client.Client
}

// newActivityRunner registers the activities configured with cfg, reading their
// credentials from a Kubernetes that holds only s and the Pipelines as Code
// Repository that makes namespace tenant own repoURL (build-service's onboarding).
func newActivityRunner(t *testing.T, cfg changegrouppr.Config, s scmSecret, repoURL string) activityRunner {
	t.Helper()
	return newActivityEnv(t, cfg, repoURL, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: "tenant",
			Labels: map[string]string{forge.LabelCredentials: "scm", forge.LabelSCMHost: "127.0.0.1"}},
		Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{"username": []byte(s.username), "password": []byte(s.token)},
	})
}

// newActivityEnv registers the activities configured with cfg, with a Kubernetes
// that holds objs, where namespace tenant owns repoURL.
func newActivityEnv(t *testing.T, cfg changegrouppr.Config, repoURL string, objs ...client.Object) activityRunner {
	k8s := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(objs...).Build()
	a := activityRunner{t: t, k8s: k8s}
	a.own("tenant", repoURL, time.Now().Add(-24*time.Hour))
	// As the worker checks: ownership read from the cluster, refusals recorded as Events.
	cfg.Ownership = &ownership.Checker{Reader: k8s, Events: k8s}
	var ts testsuite.WorkflowTestSuite
	a.env = ts.NewTestActivityEnvironment()
	changegrouppr.New(k8s, cfg).Register(a.env)
	return a
}

// own makes namespace own repoURL with a Pipelines as Code Repository created at
// created (a fake API server stamps no creationTimestamp).
func (a activityRunner) own(namespace, repoURL string, created time.Time) {
	a.t.Helper()
	r := ownershiptest.Repository(namespace, repoURL)
	r.CreationTimestamp = metav1.NewTime(created.Truncate(time.Second))
	if err := a.k8s.Create(context.Background(), r); err != nil {
		a.t.Fatal(err)
	}
}

func (a activityRunner) sync(req changegroupprapi.SyncRequest) changegroupprapi.Observed {
	a.t.Helper()
	o, err := a.trySync(req)
	if err != nil {
		a.t.Fatalf("sync: %v", err)
	}
	return o
}

func (a activityRunner) trySync(req changegroupprapi.SyncRequest) (changegroupprapi.Observed, error) {
	v, err := a.env.ExecuteActivity(changegroupprapi.SyncActivity, req)
	var o changegroupprapi.Observed
	if err == nil {
		err = v.Get(&o)
	}
	return o, err
}

// observe runs the observe activity, failing the test on an error.
func (a activityRunner) observe(req changegroupprapi.ObserveRequest) changegroupprapi.Observed {
	a.t.Helper()
	return a.run("observe", changegroupprapi.ObserveActivity, req)
}

// close runs the close activity, failing the test on an error.
func (a activityRunner) close(req changegroupprapi.CloseRequest) changegroupprapi.Observed {
	a.t.Helper()
	return a.run("close", changegroupprapi.CloseActivity, req)
}

func (a activityRunner) run(name string, activity, req any) changegroupprapi.Observed {
	a.t.Helper()
	v, err := a.env.ExecuteActivity(activity, req)
	var o changegroupprapi.Observed
	if err == nil {
		err = v.Get(&o)
	}
	if err != nil {
		a.t.Fatalf("%s: %v", name, err)
	}
	return o
}

// checkErrorsClassified checks what every forge client owes the workflow: failNext
// makes the forge (or the proxy in front of it) answer the next n API requests with
// status and Retry-After seconds, and each sync fails with a Temporal error the
// retry policy reads right (typ422 is the forge's type for a 422); neither errors
// nor results name token; a namespace without credentials is NoCredentials.
func (a activityRunner) checkErrorsClassified(req changegroupprapi.SyncRequest, failNext func(n, status, retryAfter int), typ422, token string) {
	a.t.Helper()
	var ae *temporal.ApplicationError
	var err error
	for _, c := range []struct {
		name               string
		status, retryAfter int
		ok                 func() bool
	}{
		{"429", http.StatusTooManyRequests, 42, func() bool { return !ae.NonRetryable() && ae.NextRetryDelay() == 42*time.Second }},
		{"403 with Retry-After", http.StatusForbidden, 5, func() bool { return !ae.NonRetryable() && ae.NextRetryDelay() == 5*time.Second }},
		{"422", http.StatusUnprocessableEntity, 0, func() bool { return ae.NonRetryable() && ae.Type() == typ422 }},
		{"502", http.StatusBadGateway, 0, func() bool { return !ae.NonRetryable() }},
		{"401", http.StatusUnauthorized, 0, func() bool { return !ae.NonRetryable() && ae.Type() == "Unauthorized" }},
	} {
		failNext(1, c.status, c.retryAfter)
		if _, err = a.trySync(req); !errors.As(err, &ae) || !c.ok() {
			a.t.Fatalf("%s: %v (%T)", c.name, err, err)
		}
	}
	o := a.sync(req)
	for _, s := range []string{err.Error(), strings.Join([]string{o.PR.URL, o.HumanEditReason, o.HeadSHA}, " ")} {
		if strings.Contains(s, token) {
			a.t.Fatal("token leaked")
		}
	}
	// Namespace elsewhere owns a repository of the forge and has no credentials.
	noCreds := req
	noCreds.Repo.Namespace, noCreds.Repo.URL = "elsewhere", req.Repo.URL+"-of-elsewhere"
	a.own("elsewhere", noCreds.Repo.URL, time.Now())
	if _, err := a.trySync(noCreds); !errors.As(err, &ae) || ae.Type() != "NoCredentials" || strings.Contains(err.Error(), token) {
		a.t.Fatalf("no credentials: %v", err)
	}
	// The tenant's credentials for elsewhere's repository: refused before they
	// are read, nothing written there.
	stolen := req
	stolen.Repo.URL = noCreds.Repo.URL
	if _, err := a.trySync(stolen); !errors.As(err, &ae) || ae.Type() != ownership.ErrorType || !ae.NonRetryable() || strings.Contains(err.Error(), token) {
		a.t.Fatalf("another namespace's repository: %v", err)
	}
}
