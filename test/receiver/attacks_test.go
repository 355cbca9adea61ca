package receiver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge"
	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	"github.com/nudgeflow/nudgeflow/bridge/receiverapi"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	"github.com/nudgeflow/nudgeflow/test/localbridge"
	"github.com/nudgeflow/nudgeflow/test/world"
	"github.com/nudgeflow/nudgeflow/workflows/prgroup"
)

const waitTimeout = time.Minute

// pullRequest is a GitHub pull_request delivery's body: repository repoURL (its
// full_name the URL's path unless fullName says otherwise), pull request prURL.
func pullRequest(action, repoURL, fullName, prURL string, number int, merged bool, head string) string {
	if fullName == "" {
		fullName = forgehook.RepoKey(repoURL)[strings.Index(forgehook.RepoKey(repoURL), "/")+1:]
	}
	state := "open"
	if action == "closed" {
		state = "closed"
	}
	b, _ := json.Marshal(map[string]any{"action": action, "number": number,
		"pull_request": map[string]any{"number": number, "html_url": prURL, "state": state, "merged": merged,
			"head": map[string]any{"ref": head, "sha": strings.Repeat("0", 40)}},
		"repository": map[string]any{"full_name": fullName, "html_url": repoURL}})
	return string(b)
}

var deliveries int

// post sends body to the receiver as GitHub does, signed with secret, and returns
// the answer's status.
func post(t *testing.T, body, secret string) int {
	t.Helper()
	deliveries++
	req, err := http.NewRequest(http.MethodPost, running.ForgeHookURL, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("%s-%d", t.Name(), deliveries))
	req.Header.Set("X-Hub-Signature-256", githubemu.Sign(secret, []byte(body)))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// signals are the payloads of the signals named name in workflow id's history.
func signals[T any](t *testing.T, id, name string) []T {
	t.Helper()
	w := world.Get(t)
	iter := w.TemporalClient.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var out []T
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		a := ev.GetWorkflowExecutionSignaledEventAttributes()
		if a == nil || a.SignalName != name {
			continue
		}
		var v T
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(a.Input, &v))
		out = append(out, v)
	}
	return out
}

func bind(t *testing.T, name, namespace, secret string, repos ...string) {
	t.Helper()
	require.NoError(t, localbridge.Bind(context.Background(), world.Get(t).Kube,
		localbridge.BoundSecret{Name: name, Namespace: namespace, Secret: secret, Repositories: repos}))
	t.Cleanup(func() {
		_ = world.Get(t).Kube.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: localbridge.SystemNamespace, Name: name}})
	})
}

func component(ns, name, gitURL string, nudges ...string) *mirrorv1alpha1.Component {
	c := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: mirrorv1alpha1.ComponentSpec{ComponentName: name, ContainerImage: "quay.io/org/" + name, BuildNudgesRef: nudges}}
	if gitURL != "" {
		c.Spec.Source.GitSource = &mirrorv1alpha1.GitSource{URL: gitURL, Revision: "main"}
	}
	return c
}

// Forged bodies against the ChangeGroups of tenant B, whose bundle repository is
// bound to B's own secret: each is validly signed by something an attacker may
// hold (tenant A's own bound secret, the shared secret every unbound repository
// uses) and names B's pull request; each is refused and B's group's workflow
// receives no signal. B's own delivery reaches it, as a hint without merged or
// closed (the group reads its PR before it ends).
func TestForgedDeliveriesNeverReachAnotherTenantsGroup(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	nsA, nsB := w.Namespace(t), w.Namespace(t)
	appURL := "https://github.example.com/" + nsA + "/app"
	bundleURL := "https://github.example.com/" + nsB + "/bundle"
	otherURL := "https://github.example.com/" + nsA + "/unbound"
	prB := bundleURL + "/pull/7"
	bind(t, nsA, nsA, "secret-of-"+nsA, appURL)
	bind(t, nsB, nsB, "secret-of-"+nsB, bundleURL)

	// B's group, its PR #7 in status, its workflow started by the bridge.
	for _, obj := range []ctrlclient.Object{component(nsB, "bundle", bundleURL), component(nsB, "operand", "", "bundle"),
		&appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Namespace: nsB, Name: "g"},
			Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "operand"}}}},
	} {
		require.NoError(t, w.Kube.Create(ctx, obj))
	}
	cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Namespace: nsB, Name: "g"}}
	require.NoError(t, w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(cg), cg))
	id := changegroupapi.WorkflowID(nsB, "g", string(cg.UID))
	world.Eventually(t, waitTimeout, "the bridge starts B's group's workflow", func() (bool, error) {
		_, err := w.TemporalClient.DescribeWorkflowExecution(ctx, id, "")
		return err == nil, err
	})
	require.NoError(t, world.SetStatus(ctx, w.Kube, cg, func() { cg.Status.PullRequestURL = prB }))

	// B's own delivery reaches B's group once the receiver has the binding and the
	// bridge's cache the status: the route the attacks below aim at works.
	world.Eventually(t, waitTimeout, "B's own delivery reaches B's group", func() (bool, error) {
		if code := post(t, pullRequest("edited", bundleURL, "", prB, 7, false, "x"), "secret-of-"+nsB); code != http.StatusAccepted {
			return false, fmt.Errorf("answered %d", code)
		}
		return len(signals[changegroupapi.PREvent](t, id, changegroupapi.SignalPREvent)) > 0, nil
	})
	before := len(signals[changegroupapi.PREvent](t, id, changegroupapi.SignalPREvent))

	for _, c := range []struct {
		name, body, secret string
		want               int
	}{
		{"tenant A's bound secret, A's repository, B's pull request", pullRequest("closed", appURL, "", prB, 7, true, "x"), "secret-of-" + nsA, http.StatusForbidden},
		{"tenant A's bound secret, A's repository, B's name", pullRequest("closed", appURL, nsB+"/bundle", appURL+"/pull/7", 7, true, "x"), "secret-of-" + nsA, http.StatusForbidden},
		{"tenant A's bound secret, B's repository", pullRequest("closed", bundleURL, "", prB, 7, true, "x"), "secret-of-" + nsA, http.StatusUnauthorized},
		{"the shared secret, B's bound repository", pullRequest("closed", bundleURL, "", prB, 7, true, "x"), sharedSecret, http.StatusUnauthorized},
		{"the shared secret, an unbound repository, B's pull request", pullRequest("closed", otherURL, "", prB, 7, true, "x"), sharedSecret, http.StatusForbidden},
	} {
		require.Equal(t, c.want, post(t, c.body, c.secret), c.name)
		t.Logf("receiver-attack case=%q refused=true code=%d", c.name, c.want)
	}
	// The receiver answers after the bridge signalled, so nothing is in flight.
	got := signals[changegroupapi.PREvent](t, id, changegroupapi.SignalPREvent)
	require.Len(t, got, before, "no forged delivery reached B's group")

	require.Equal(t, http.StatusAccepted, post(t, pullRequest("closed", bundleURL, "", prB, 7, true, "x"), "secret-of-"+nsB))
	got = signals[changegroupapi.PREvent](t, id, changegroupapi.SignalPREvent)
	require.Len(t, got, before+1)
	last := got[len(got)-1]
	require.Equal(t, "closed", last.Action)
	require.False(t, last.Merged || last.Closed, "a group learns the merge by reading its PR, never from the signal: %+v", last)
}

// The PR-group router: the same repository path in two namespaces and on two
// hosts. An event verified by tenant A's bound secret reaches A's PR group only,
// not B's (whose component names the same repository); an event about the same
// owner/name on another host reaches neither, nor the group on that other host's
// namesake; the shared secret's event about C's repository reaches C's only.
func TestPRGroupEventsStayInTheirNamespaceAndHost(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	nsA, nsB, nsC := w.Namespace(t), w.Namespace(t), w.Namespace(t)
	owner := "org-" + nsA
	libGitHub := "https://github.example.com/" + owner + "/lib"
	libGitLab := "https://gitlab.example.com/" + owner + "/lib"
	bind(t, nsA, nsA, "secret-of-"+nsA, libGitHub)
	for _, c := range []*mirrorv1alpha1.Component{
		component(nsA, "lib", libGitHub+".git", "app"), component(nsA, "app", "https://github.example.com/"+owner+"/app"),
		component(nsB, "lib", libGitHub, "app"), component(nsB, "app", "https://github.example.com/"+owner+"/app"),
		component(nsC, "lib", libGitLab, "app"), component(nsC, "app", "https://gitlab.example.com/"+owner+"/app"),
	} {
		require.NoError(t, w.Kube.Create(ctx, c))
	}
	// The PR groups' workflows, waiting (the bridge signals running ones only).
	ids := map[string]string{}
	for _, ns := range []string{nsA, nsB, nsC} {
		ids[ns] = prgroup.WorkflowID(ns, prgroup.GroupOf("feature"), "app")
		_, err := w.TemporalClient.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: ids[ns], TaskQueue: taskQueue}, prgroup.WorkflowName)
		require.NoError(t, err)
	}
	count := func(ns string) int { return len(signals[prgroup.OriginEvent](t, ids[ns], prgroup.SignalOriginEvent)) }

	world.Eventually(t, waitTimeout, "A's own delivery reaches A's PR group", func() (bool, error) {
		code := post(t, pullRequest("opened", libGitHub, "", libGitHub+"/pull/1", 1, false, "feature"), "secret-of-"+nsA)
		if code != http.StatusAccepted {
			return false, fmt.Errorf("answered %d", code)
		}
		return count(nsA) > 0, nil
	})
	a := count(nsA)
	require.Zero(t, count(nsB), "an event A's bound secret verified does not reach B's group on the same repository")
	require.Zero(t, count(nsC))

	// The same owner/name on another host, under the shared secret: valid, and
	// about none of these components.
	evil := "https://forge.evil.example/" + owner + "/lib"
	require.Equal(t, http.StatusAccepted, post(t, pullRequest("closed", evil, "", evil+"/pull/1", 1, true, "feature"), sharedSecret))
	require.Equal(t, []int{a, 0, 0}, []int{count(nsA), count(nsB), count(nsC)}, "another host's namesake reaches no group")

	// C's repository (unbound, the shared secret) reaches C's group only.
	require.Equal(t, http.StatusAccepted, post(t, pullRequest("closed", libGitLab, "", libGitLab+"/pull/1", 1, true, "feature"), sharedSecret))
	world.Eventually(t, waitTimeout, "C's event reaches C's group", func() (bool, error) { return count(nsC) == 1, nil })
	require.Equal(t, []int{a, 0, 1}, []int{count(nsA), count(nsB), count(nsC)})
}

// The receiver's credential is worth nothing but the bridge's receiver API: the
// API server refuses its token. And no one else may use that API: a tenant's
// ServiceAccount token, for the bridge's audience or the API server's, is refused
// by the bridge, and what it posts reaches no workflow.
func TestReceiverCredentialAndAPIAreTheReceiversAlone(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(w.Config())
	require.NoError(t, err)
	token := func(ns, sa string, audiences ...string) string {
		t.Helper()
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: ptr.To(int64(600))}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return tr.Status.Token
	}
	receiverToken := token(localbridge.SystemNamespace, bridge.ReceiverServiceAccount, receiverapi.Audience)
	cfg := w.Config()
	cfg.CertData, cfg.KeyData, cfg.BearerToken = nil, nil, receiverToken
	asReceiver, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = asReceiver.CoreV1().Secrets(localbridge.SystemNamespace).List(ctx, metav1.ListOptions{})
	require.Error(t, err)
	require.Contains(t, err.Error(), "Unauthorized", "the API server refuses a token for the bridge's audience")

	tenant := w.Namespace(t)
	require.NoError(t, w.Kube.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "intruder"}}))
	host, port, _ := w.WebhookServer()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(w.ControlPlane.Env.WebhookInstallOptions.LocalServingCAData))
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	event, _ := json.Marshal(forgehook.Event{Provider: "github", Action: "closed", Merged: true, State: "closed", Repo: "github.example.com/x/y",
		RepoFullName: "x/y", URL: "https://github.example.com/x/y/pull/1", Number: 1, Namespace: tenant})
	call := func(method, path, bearer string, body []byte) int {
		req, err := http.NewRequest(method, fmt.Sprintf("https://%s:%d%s", host, port, path), bytes.NewReader(body))
		require.NoError(t, err)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	for name, c := range map[string]struct {
		bearer string
		want   int
	}{
		"no token": {"", http.StatusUnauthorized},
		"a tenant's token for the bridge's audience": {token(tenant, "intruder", receiverapi.Audience), http.StatusForbidden},
		"a tenant's token for the API server":        {token(tenant, "intruder"), http.StatusUnauthorized},
		"a tenant's token for another audience":      {token(tenant, "intruder", "nudgeflow-receiver"), http.StatusUnauthorized},
	} {
		require.Equal(t, c.want, call(http.MethodGet, receiverapi.SecretsPath, c.bearer, nil), "%s: the bound secrets", name)
		require.Equal(t, c.want, call(http.MethodPost, receiverapi.EventsPath, c.bearer, event), "%s: an event", name)
		t.Logf("receiver-attack case=%q refused=true code=%d", name, c.want)
	}
	require.Equal(t, http.StatusOK, call(http.MethodGet, receiverapi.SecretsPath, receiverToken, nil), "the receiver itself is served")
}
