package tenancy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	enumspb "go.temporal.io/api/enums/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	pacv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/pipelinesascode/v1alpha1"
	"github.com/nudgeflow/nudgeflow/bridge/builds"
	"github.com/nudgeflow/nudgeflow/contracts/changegroupapi"
	"github.com/nudgeflow/nudgeflow/internal/credentials"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/ownership"
	"github.com/nudgeflow/nudgeflow/test/forgedbuild"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	"github.com/nudgeflow/nudgeflow/test/localbridge"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// outcome is what one attack came to.
type outcome struct {
	name    string
	refused bool
}

// ledger collects the attacks' outcomes for the summary line.
type ledger struct {
	mu   sync.Mutex
	list []outcome
}

func (l *ledger) add(name string, refused bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, outcome{name, refused})
}

// victim is the tenant under attack: it owns two repositories on the GitHub
// emulator, onboarded as build-service onboards them. "app" is nudged by the
// victim's own immediate edge (so its namespace holds a run Secret with a token
// for it, the one place such a token may be); nothing of the victim ever pushes to
// it, so any write there is an attacker's.
type victim struct {
	*tenant
	owner string
	group *appstudiov1alpha1.ChangeGroup
}

func (v *victim) repoURL(name string) string { return shared.emu.URL() + "/" + v.owner + "/" + name }

func setUpVictim(t *testing.T) *victim {
	t.Helper()
	w := world.Get(t)
	v := &victim{tenant: newTenant(t, "alice")}
	v.owner = "victim-" + v.ns
	shared.emu.CreateRepo(v.owner, "app", "main", map[string]string{"Dockerfile": "FROM quay.io/org/operand@" + digestOf(0) + "\n"})
	// The cluster's build-service creates the Components' Repositories (the world's
	// client onboards what it creates), as on a real onboarding.
	for _, c := range []*mirrorv1alpha1.Component{
		component(v.ns, "operand", ""),
		component(v.ns, "app", v.repoURL("app")),
		component(v.ns, "bundle", v.repoURL("bundle")),
		component(v.ns, "operand-a", ""),
		component(v.ns, "operand-b", ""),
	} {
		require.NoError(t, w.Kube.Create(context.Background(), c))
	}
	// The victim's edges: its own immediate nudge of "app", and the operands its
	// ChangeGroup collects into one PR on "bundle" (startGroup).
	nudgeConfig(t, v.tenant,
		konfluxv1alpha1.NudgeRelationship{From: "operand", To: "app", Mode: konfluxv1alpha1.ModeImmediate},
		konfluxv1alpha1.NudgeRelationship{From: "operand-a", To: "bundle", Mode: konfluxv1alpha1.ModeImmediate},
		konfluxv1alpha1.NudgeRelationship{From: "operand-b", To: "bundle", Mode: konfluxv1alpha1.ModeImmediate})
	build(t, v.ns, "operand", 1)
	world.Eventually(t, waitFor, "the victim's own nudge gets its run and token Secret", func() (bool, error) {
		runs, err := renovateRuns(v.ns)
		if err != nil || len(runs) == 0 {
			return false, err
		}
		var s corev1.Secret
		return true, w.Kube.Get(context.Background(), types.NamespacedName{Namespace: v.ns, Name: runs[0].Name}, &s)
	})
	v.startGroup(t)
	return v
}

// csvPath is the bundle's manifest that lists the operands' images.
const csvPath = "bundle/manifests/operator.clusterserviceversion.yaml"

// startGroup gives the victim a ChangeGroup collecting operand-a and operand-b into
// one draft PR on its bundle repository, whose forge webhook is bound to the
// victim's own secret; operand-a's build opens the PR.
func (v *victim) startGroup(t *testing.T) {
	t.Helper()
	w := world.Get(t)
	ctx := context.Background()
	var csv strings.Builder
	csv.WriteString("kind: ClusterServiceVersion\nspec:\n  relatedImages:\n")
	for _, c := range []string{"operand-a", "operand-b"} {
		fmt.Fprintf(&csv, "  - name: %s\n    image: quay.io/org/%s@%s\n", c, c, digestOf(0))
	}
	shared.emu.CreateRepo(v.owner, "bundle", "main", map[string]string{csvPath: csv.String()})
	for _, c := range []string{"operand-a", "operand-b"} {
		comp := &mirrorv1alpha1.Component{}
		require.NoError(t, w.Kube.Get(ctx, types.NamespacedName{Namespace: v.ns, Name: c}, comp))
		require.NoError(t, world.SetStatus(ctx, w.Kube, comp, func() { comp.Status.LastPromotedImage = "quay.io/org/" + c + "@" + digestOf(0) }))
	}
	require.NoError(t, localbridge.Bind(ctx, w.Kube, localbridge.BoundSecret{Name: "hook-" + v.ns, Namespace: v.ns,
		Secret: boundSecretOf(v.ns), Repositories: []string{v.repoURL("bundle")}}))
	cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "release", Namespace: v.ns},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle",
			NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "operand-a"}, {Name: "operand-b"}}}}
	require.NoError(t, v.kube.Create(ctx, cg), "the victim creates its ChangeGroup")
	build(t, v.ns, "operand-a", 1)
	world.Eventually(t, waitFor, "the victim's group opens its draft PR with operand-a's build", func() (bool, error) {
		if err := w.Kube.Get(ctx, ctrlclient.ObjectKeyFromObject(cg), cg); err != nil {
			return false, err
		}
		prs := shared.emu.PRs(v.owner, "bundle")
		if len(prs) != 1 || cg.Status.PullRequestURL == "" {
			return false, fmt.Errorf("%d PRs, status %+v", len(prs), cg.Status)
		}
		csv, _ := shared.emu.FileAt(v.owner, "bundle", prs[0].HeadSHA, csvPath)
		return strings.Contains(csv, digestOf(1)), nil
	})
	v.group = cg
}

func boundSecretOf(ns string) string { return "hook-secret-of-" + ns }

// groupID is the victim's ChangeGroup's workflow.
func (v *victim) groupID() string {
	return changegroupapi.WorkflowID(v.ns, v.group.Name, string(v.group.UID))
}

// landedInPR reports whether digest is anywhere in the victim's group's PR: its
// head's manifest or its description.
func (v *victim) landedInPR(digest string) bool {
	for _, pr := range shared.emu.PRs(v.owner, "bundle") {
		csv, _ := shared.emu.FileAt(v.owner, "bundle", pr.HeadSHA, csvPath)
		if strings.Contains(csv, digest) || strings.Contains(pr.Body, digest) {
			return true
		}
	}
	return false
}

// phase is the victim's group's phase now.
func (v *victim) phase(t *testing.T) appstudiov1alpha1.ChangeGroupPhase {
	t.Helper()
	var cg appstudiov1alpha1.ChangeGroup
	require.NoError(t, shared.admin.Get(context.Background(), ctrlclient.ObjectKeyFromObject(v.group), &cg))
	return cg.Status.Phase
}

// prEvents counts the pull request signals the victim's group received.
func (v *victim) prEvents(t *testing.T) int {
	t.Helper()
	iter := shared.temporal.GetWorkflowHistory(context.Background(), v.groupID(), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.SignalName == changegroupapi.SignalPREvent {
			n++
		}
	}
	return n
}

func digestOf(n int) string { return fmt.Sprintf("sha256:%064x", n) }

func component(ns, name, gitURL string) *mirrorv1alpha1.Component {
	c := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: mirrorv1alpha1.ComponentSpec{ComponentName: name, ContainerImage: "quay.io/org/" + name}}
	if gitURL != "" {
		// 127.0.0.1 names no forge: the annotation does, as build-service reads it.
		c.Annotations = map[string]string{mirrorv1alpha1.AnnotationGitProvider: "github"}
		c.Spec.Source.GitSource = &mirrorv1alpha1.GitSource{URL: gitURL, Revision: "main"}
	}
	return c
}

func nudgeConfig(t *testing.T, tn *tenant, edges ...konfluxv1alpha1.NudgeRelationship) {
	t.Helper()
	nc := &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName, Namespace: tn.ns},
		Spec: konfluxv1alpha1.NudgeConfigSpec{Nudges: edges}}
	require.NoError(t, tn.kube.Create(context.Background(), nc), "a namespace admin writes its NudgeConfig (the shipped aggregated role)")
}

// build is the n-th succeeded push build of component, as the cluster's Tekton
// writes it (the administrator's client: tenants do not write build results).
func build(t *testing.T, ns, comp string, n int) *tektonv1.PipelineRun {
	t.Helper()
	w := world.Get(t)
	ctx := context.Background()
	plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-on-push-%d", comp, n), Namespace: ns,
		Labels: map[string]string{builds.LabelComponent: comp, builds.LabelPipelineType: builds.PipelineTypeBuild,
			builds.KeyEventType: "push"},
		Annotations: map[string]string{builds.KeyEventType: "push"}},
		Spec: tektonv1.PipelineRunSpec{PipelineRef: &tektonv1.PipelineRef{Name: "docker-build"}}}
	require.NoError(t, w.Kube.Create(ctx, plr))
	require.NoError(t, world.SetStatus(ctx, w.Kube, plr, func() {
		konflux.SucceededBuild{ImageURL: fmt.Sprintf("quay.io/org/%s:rev%d", comp, n), Digest: digestOf(n),
			Started: time.Now().Add(-time.Minute), Completed: time.Now()}.WriteStatus(plr)
	}))
	return plr
}

func renovateRuns(ns string) ([]tektonv1.PipelineRun, error) {
	var list tektonv1.PipelineRunList
	err := shared.worker.List(context.Background(), &list, ctrlclient.InNamespace(ns),
		ctrlclient.MatchingLabels{renovate.LabelType: renovate.LabelTypeNudge})
	return list.Items, err
}

// warnings counts the Warning Events of reason on the object named name (whose
// message holds every part).
func warnings(ns, name, reason string, parts ...string) (int, error) {
	var list corev1.EventList
	if err := shared.admin.List(context.Background(), &list, ctrlclient.InNamespace(ns)); err != nil {
		return 0, err
	}
	n := 0
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning && containsAll(e.Message, parts) {
			n += max(int(e.Count), 1)
		}
	}
	return n, nil
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// waitWarnings waits until the object has at least n Warning Events of reason
// whose message holds every part.
func waitWarnings(t *testing.T, ns, name, reason string, n int, parts ...string) bool {
	t.Helper()
	ok, err := world.Poll(waitFor, func() (bool, error) {
		got, err := warnings(ns, name, reason, parts...)
		return got >= n, err
	})
	if !ok {
		var list corev1.EventList
		_ = shared.admin.List(context.Background(), &list, ctrlclient.InNamespace(ns))
		for _, e := range list.Items {
			t.Logf("event %s %s %s/%s x%d: %s", e.Type, e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Count, e.Message)
		}
		t.Logf("waiting for %d %s events on %s/%s: %v", n, reason, ns, name, err)
	}
	return ok
}

// refusedNudges waits until n nudges of the Component were reported failed for
// want of ownership (one NudgeFailed Event per build, beside the one
// RepositoryNotOwned Event that says what to create).
func refusedNudges(t *testing.T, ns, name string, n int) bool {
	return waitWarnings(t, ns, name, ownership.EventReason, 1) &&
		waitWarnings(t, ns, name, "NudgeFailed", n, "does not own")
}

// forbidden reports whether err is the API server refusing the request (RBAC's 403
// or an admission policy's denial).
func forbidden(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err)
}

// TestTenantIsolation runs every attack a namespace admin (or someone who reached
// Temporal or the forge receiver) can try, as they would try it, and prints
//
//	tenant-isolation case=<name> refused=<bool>
//	tenant-isolation attacks=N refused=N foreign_writes=0 tokens_outside_owner=0
//
// foreign_writes counts write requests the forge received for the victim's
// repository that nothing of the victim makes; tokens_outside_owner counts GitHub
// App tokens found in any Secret of a namespace that does not own every repository
// the token reaches (the victim's own run Secret is where its token belongs).
func TestTenantIsolation(t *testing.T) {
	w := world.Get(t)
	ctx := context.Background()
	v := setUpVictim(t)
	var l ledger
	attack := func(name string, fn func(t *testing.T) bool) {
		t.Run(name, func(t *testing.T) {
			refused := fn(t)
			l.add(name, refused)
			require.True(t, refused, "attack %s was not refused", name)
		})
	}

	// The attacker: a namespace admin elsewhere, whose Components point at the
	// victim's repository. The GitHub App is installed on it, as the shared App is on
	// every tenant's repository.
	mallory := newTenant(t, "mallory")
	for _, c := range []*mirrorv1alpha1.Component{component(mallory.ns, "lib", ""), component(mallory.ns, "app", v.repoURL("app"))} {
		require.NoError(t, mallory.kube.Create(ctx, c), "a tenant creates its Components")
	}
	nudgeConfig(t, mallory, konfluxv1alpha1.NudgeRelationship{From: "lib", To: "app", Mode: konfluxv1alpha1.ModeImmediate})

	attack("app-token-for-foreign-repository", func(t *testing.T) bool {
		build(t, mallory.ns, "lib", 1)
		return refusedNudges(t, mallory.ns, "app", 1) && noRunSecrets(t, mallory.ns)
	})

	attack("later-repository-claim", func(t *testing.T) bool {
		// Konflux lets a tenant write Pipelines as Code Repositories in its namespace.
		require.NoError(t, mallory.kube.Create(ctx, &pacv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "stolen", Namespace: mallory.ns},
			Spec: pacv1alpha1.RepositorySpec{URL: v.repoURL("app")}}), "the API server takes the claim: PaC's own webhook is not installed here")
		build(t, mallory.ns, "lib", 2)
		return refusedNudges(t, mallory.ns, "app", 2) && noRunSecrets(t, mallory.ns)
	})

	attack("basic-auth-for-foreign-repository", func(t *testing.T) bool {
		trudy := newTenant(t, "trudy")
		const pat = "ghp_trudysOwnPersonalAccessToken0000000001"
		shared.emu.AddToken(pat, githubemu.User{Login: "trudy", Name: "Trudy", Email: "trudy@example.com"})
		require.NoError(t, trudy.kube.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "scm", Namespace: trudy.ns,
			Labels: map[string]string{credentials.LabelCredentials: credentials.LabelCredentialsSCM, credentials.LabelSCMHost: "127.0.0.1"}},
			Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"username": []byte("trudy"), "password": []byte(pat)}}))
		for _, c := range []*mirrorv1alpha1.Component{component(trudy.ns, "lib", ""), component(trudy.ns, "app", v.repoURL("app"))} {
			require.NoError(t, trudy.kube.Create(ctx, c))
		}
		nudgeConfig(t, trudy, konfluxv1alpha1.NudgeRelationship{From: "lib", To: "app", Mode: konfluxv1alpha1.ModeImmediate})
		build(t, trudy.ns, "lib", 1)
		return refusedNudges(t, trudy.ns, "app", 1) && noRunSecrets(t, trudy.ns)
	})

	attack("changegroup-on-foreign-repository", func(t *testing.T) bool {
		cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "takeover", Namespace: mallory.ns},
			Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "app",
				NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "lib"}}}}
		require.NoError(t, mallory.kube.Create(ctx, cg), "a namespace admin may create ChangeGroups (the shipped aggregated role)")
		return waitWarnings(t, mallory.ns, "takeover", ownership.EventReason, 1)
	})

	attack("tenant-writes-repository-bindings", func(t *testing.T) bool {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ownership.BindingConfigMap, Namespace: systemNamespace},
			Data: map[string]string{mallory.ns: v.repoURL("app")}}
		err := mallory.kube.Create(ctx, cm)
		return forbidden(err)
	})

	attack("tenant-writes-changegroup-status", func(t *testing.T) bool {
		var cg appstudiov1alpha1.ChangeGroup
		require.NoError(t, mallory.kube.Get(ctx, types.NamespacedName{Namespace: mallory.ns, Name: "takeover"}, &cg))
		cg.Status.Phase = appstudiov1alpha1.PhaseCompleted
		return forbidden(mallory.kube.Status().Update(ctx, &cg))
	})

	attack("tenant-reads-victim-secrets", func(t *testing.T) bool {
		var list corev1.SecretList
		return forbidden(mallory.kube.List(ctx, &list, ctrlclient.InNamespace(v.ns)))
	})

	attack("tenant-reads-victim-changegroups", func(t *testing.T) bool {
		var list appstudiov1alpha1.ChangeGroupList
		return forbidden(mallory.kube.List(ctx, &list, ctrlclient.InNamespace(v.ns)))
	})

	// What a tenant gains if it takes over the worker's identity (or a bug makes the
	// worker write what a tenant chose): the admission policy bounds every write.
	attack("worker-mints-serviceaccount-token", func(t *testing.T) bool {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "renovate-nudge-steal", Namespace: "kube-system",
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "nudgeflow"},
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
			Type: corev1.SecretTypeServiceAccountToken}
		return forbidden(shared.worker.Create(ctx, s))
	})

	attack("worker-writes-unowned-secret-in-tenant", func(t *testing.T) bool {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "renovate-nudge-loose", Namespace: mallory.ns,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "nudgeflow"}},
			Type: corev1.SecretTypeOpaque, StringData: map[string]string{"token": "x"}}
		return forbidden(shared.worker.Create(ctx, s))
	})

	// Whoever reaches Temporal: a signal the attacker writes, sent with the
	// Temporal CLI, carrying a digest nobody built, or another tenant's real build.
	attacker := forgedbuild.Temporal{Address: w.Temporal.Address, Namespace: w.Temporal.Namespace}
	forgedSignal := func(t *testing.T, b changegroupapi.ComponentBuilt) bool {
		_, err := forgedbuild.Signal(ctx, attacker, v.groupID(), changegroupapi.SignalComponentBuilt, b)
		require.NoError(t, err, "the frontend takes the signal: the attacker reached Temporal")
		ok, err := world.Poll(waitFor, func() (bool, error) {
			evs, err := forgedbuild.RefusalEvents(ctx, shared.admin, v.ns, b.Digest)
			return len(evs) > 0, err
		})
		if !ok {
			t.Logf("no BuildNotVerified Event for %s: %v", b.Digest, err)
		}
		return ok && !v.landedInPR(b.Digest)
	}
	later := time.Now().Add(time.Hour) // newer than any real build: it would win
	attack("signal-digest-nobody-built", func(t *testing.T) bool {
		nobody := forgedbuild.Digest()
		return forgedSignal(t, changegroupapi.ComponentBuilt{Component: "operand-b", Build: imagebuild.Build{Digest: nobody, PullSpec: "quay.io/org/operand-b@" + nobody, BuiltAt: later}})
	})
	attack("signal-another-tenants-build", func(t *testing.T) bool {
		run := build(t, mallory.ns, "lib", 7)
		return forgedSignal(t, changegroupapi.ComponentBuilt{Component: "operand-b", Namespace: mallory.ns, Build: imagebuild.Build{Digest: digestOf(7), PullSpec: "quay.io/org/operand-b@" + digestOf(7), BuildPipelineRun: run.Name, BuildUID: string(run.UID), BuiltAt: later}})
	})

	// The internet-facing receiver: deliveries an attacker can sign (its own bound
	// secret, the shared one) or not sign at all, about the victim's pull request.
	require.NoError(t, localbridge.Bind(ctx, w.Kube, localbridge.BoundSecret{Name: "hook-" + mallory.ns, Namespace: mallory.ns,
		Secret: boundSecretOf(mallory.ns), Repositories: []string{shared.emu.URL() + "/" + mallory.ns + "/own"}}))
	victimPR := v.group.Status.PullRequestURL
	merged := func(repoURL string) string {
		return pullRequestBody("closed", repoURL, victimPR, true)
	}
	delivery := func(t *testing.T, name string, body []byte, secret string, want int) bool {
		before := v.prEvents(t)
		var code int
		// The receiver learns new bindings from the bridge within moments: an
		// answer other than the one expected is retried until the deadline.
		ok, _ := world.Poll(waitFor, func() (bool, error) {
			code = postDelivery(t, body, secret)
			return code == want, nil
		})
		t.Logf("%s: answered %d", name, code)
		return ok && v.prEvents(t) == before && !v.phase(t).IsFinal()
	}
	// The route the attacks aim at works: the victim's own delivery, signed with its
	// bound secret, reaches its group (as a hint: the group reads its PR itself).
	before := v.prEvents(t)
	world.Eventually(t, waitFor, "the victim's own delivery reaches its group", func() (bool, error) {
		if code := postDelivery(t, []byte(pullRequestBody("edited", v.repoURL("bundle"), victimPR, false)), boundSecretOf(v.ns)); code != http.StatusAccepted {
			return false, fmt.Errorf("answered %d", code)
		}
		return v.prEvents(t) > before, nil
	})
	attack("delivery-signed-with-own-bound-secret", func(t *testing.T) bool {
		return delivery(t, "mallory's secret, her repository, the victim's PR",
			[]byte(merged(shared.emu.URL()+"/"+mallory.ns+"/own")), boundSecretOf(mallory.ns), http.StatusForbidden)
	})
	attack("delivery-shared-secret-for-bound-repository", func(t *testing.T) bool {
		return delivery(t, "the shared secret, the victim's bound repository", []byte(merged(v.repoURL("bundle"))), webhookSecret, http.StatusUnauthorized)
	})
	attack("delivery-unsigned", func(t *testing.T) bool {
		return delivery(t, "no signature", []byte(merged(v.repoURL("bundle"))), "", http.StatusUnauthorized)
	})
	attack("delivery-oversized", func(t *testing.T) bool {
		big := make([]byte, 3<<20)
		for i := range big {
			big[i] = ' '
		}
		return delivery(t, "3 MiB", big, webhookSecret, http.StatusRequestEntityTooLarge)
	})

	t.Run("summary", func(t *testing.T) {
		foreign := len(shared.emu.WritesTo(v.owner, "app"))
		outside := tokensOutsideOwner(t, w)
		refused := 0
		for _, o := range l.list {
			fmt.Printf("tenant-isolation case=%s refused=%t\n", o.name, o.refused)
			if o.refused {
				refused++
			}
		}
		fmt.Printf("tenant-isolation attacks=%d refused=%d foreign_writes=%d tokens_outside_owner=%d\n", len(l.list), refused, foreign, outside)
		require.GreaterOrEqual(t, len(l.list), 10)
		require.Equal(t, len(l.list), refused)
		require.Zero(t, foreign, "writes to the victim's repository: %v", shared.emu.WritesTo(v.owner, "app"))
		require.Zero(t, outside)
		require.Positive(t, tokensInside, "the scan found the victim's own token where it belongs")
	})
}

// pullRequestBody is a GitHub pull_request delivery about prURL in repoURL.
func pullRequestBody(action, repoURL, prURL string, merged bool) string {
	state := "open"
	if action == "closed" {
		state = "closed"
	}
	u, _ := url.Parse(prURL)
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	number, _ := strconv.Atoi(parts[len(parts)-1])
	b, _ := json.Marshal(map[string]any{"action": action, "number": number,
		"pull_request": map[string]any{"number": number, "html_url": prURL, "state": state, "merged": merged,
			"head": map[string]any{"ref": "konflux/release", "sha": strings.Repeat("0", 40)}},
		"repository": map[string]any{"full_name": strings.TrimPrefix(strings.TrimPrefix(repoURL, shared.emu.URL()), "/"), "html_url": repoURL}})
	return string(b)
}

// postDelivery sends body to the receiver as GitHub does, signed with secret
// (unsigned when secret is empty), and returns the answer's status.
func postDelivery(t *testing.T, body []byte, secret string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, shared.receiverURL, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("tenancy-%d", time.Now().UnixNano()))
	if secret != "" {
		req.Header.Set("X-Hub-Signature-256", githubemu.Sign(secret, body))
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// tokensInside counts App tokens the last scan found in their owner's namespace.
var tokensInside int

// tokensOutsideOwner scans every Secret of the cluster for GitHub App installation
// tokens and counts those in a namespace that does not own every repository the
// token reaches (owned: a Pipelines as Code Repository of the namespace names it).
func tokensOutsideOwner(t *testing.T, w *world.World) int {
	t.Helper()
	ctx := context.Background()
	var secrets corev1.SecretList
	require.NoError(t, w.Kube.List(ctx, &secrets))
	var repos pacv1alpha1.RepositoryList
	require.NoError(t, w.Kube.List(ctx, &repos))
	oldest := map[string]pacv1alpha1.Repository{}
	for _, r := range repos.Items {
		key := strings.TrimPrefix(strings.TrimPrefix(r.Spec.URL, shared.emu.URL()), "/")
		if o, ok := oldest[key]; !ok || r.CreationTimestamp.Before(&o.CreationTimestamp) {
			oldest[key] = r
		}
	}
	outside := 0
	tokensInside = 0
	for _, s := range secrets.Items {
		for _, v := range s.Data {
			if shared.emu.TokenPermissions(string(v)) == nil {
				continue
			}
			scope := shared.emu.TokenScope(string(v))
			ok := scope != ""
			for _, repo := range strings.Split(scope, ",") {
				if o, found := oldest[repo]; !found || o.Namespace != s.Namespace {
					ok = false
				}
			}
			if ok {
				tokensInside++
			} else {
				t.Logf("an App token for %q in Secret %s/%s", scope, s.Namespace, s.Name)
				outside++
			}
		}
	}
	return outside
}

// noRunSecrets: no Renovate run, hence no run Secret, was made in ns.
func noRunSecrets(t *testing.T, ns string) bool {
	runs, err := renovateRuns(ns)
	require.NoError(t, err)
	var secrets corev1.SecretList
	require.NoError(t, world.Get(t).Kube.List(context.Background(), &secrets, ctrlclient.InNamespace(ns),
		ctrlclient.MatchingLabels{"app.kubernetes.io/managed-by": "nudgeflow"}))
	return len(runs) == 0 && len(secrets.Items) == 0
}
