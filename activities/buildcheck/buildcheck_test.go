package buildcheck

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.temporal.io/sdk/testsuite"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/imagebuild"
	"github.com/nudgeflow/nudgeflow/internal/konflux"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

const ns = "tenant"

func digest(c string) string { return "sha256:" + strings.Repeat(c, 64) }

var started = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// buildRun is a succeeded build of component that pushed quay.io/org/<component>@d.
func buildRun(name, component, d string) *tektonv1.PipelineRun {
	plr := &tektonv1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name),
		Labels: map[string]string{konflux.LabelComponent: component}}}
	konflux.SucceededBuild{ImageURL: "quay.io/org/" + component + ":on-push", Digest: d, Started: started, Completed: started.Add(time.Minute)}.WriteStatus(plr)
	return plr
}

func request(component, d, run string) Request {
	return Request{Namespace: ns, Component: component, Workflow: "changegroup/tenant/g/uid", Subject: Subject{Kind: KindChangeGroup, Name: "g", UID: "cg-uid"}, Build: imagebuild.Build{Digest: d, PullSpec: "quay.io/org/" + component + "@" + d, BuildPipelineRun: run}}
}

func verifier(t *testing.T, objs ...ctrlclient.Object) (func(Request) Verdict, ctrlclient.Client) {
	t.Helper()
	k := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(objs...).Build()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	(&Activities{Kube: k, SnapshotPage: 2}).Register(env)
	return func(req Request) Verdict {
		t.Helper()
		res, err := env.ExecuteActivity(ActivityName, req)
		require.NoError(t, err)
		var v Verdict
		require.NoError(t, res.Get(&v))
		return v
	}, k
}

// Each source proves a build on its own, cheapest first; whatever the claim gets
// wrong about a real build is refused.
func TestVerifyBuildSources(t *testing.T) {
	comp := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: ns, UID: "comp-uid"},
		Spec:   mirrorv1alpha1.ComponentSpec{ContainerImage: "quay.io/org/op"},
		Status: mirrorv1alpha1.ComponentStatus{LastPromotedImage: "quay.io/org/op@" + digest("b")}}
	var snaps []ctrlclient.Object
	for i := range 5 {
		s := &mirrorv1alpha1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("snap-%d", i), Namespace: ns},
			Spec: mirrorv1alpha1.SnapshotSpec{Components: []mirrorv1alpha1.SnapshotComponent{{Name: "other", ContainerImage: "quay.io/org/other@" + digest("c")}}}}
		if i == 4 { // the last one (the fake client ignores pages: test/deploy pages on the API server)
			s.Spec.Components = append(s.Spec.Components, mirrorv1alpha1.SnapshotComponent{Name: "op", ContainerImage: "quay.io/org/op@" + digest("c")})
		}
		snaps = append(snaps, s)
	}
	otherNS := buildRun("op-build-x", "op", digest("d"))
	otherNS.Namespace = "elsewhere"
	objs := append([]ctrlclient.Object{comp, buildRun("op-build-1", "op", digest("a")), buildRun("other-build", "other", digest("e")), otherNS}, snaps...)
	failed := buildRun("op-build-failed", "op", digest("f"))
	failed.Status.Conditions[0].Status = corev1.ConditionFalse
	objs = append(objs, failed)
	verify, _ := verifier(t, objs...)

	withTime := request("op", digest("a"), "op-build-1")
	withTime.BuiltAt, withTime.BuildUID = started, "uid-op-build-1"
	wrongUID := withTime
	wrongUID.BuildUID = "uid-forged"
	later := withTime
	later.BuiltAt = started.Add(time.Hour)
	otherRepo := request("op", digest("a"), "op-build-1")
	otherRepo.PullSpec = "evil.example/org/op@" + digest("a")
	inconsistent := request("op", digest("a"), "")
	inconsistent.PullSpec = "quay.io/org/op@" + digest("b")
	otherClaim := request("op", digest("a"), "op-build-1")
	otherClaim.ClaimedNamespace = "elsewhere"
	promotedElsewhere := request("op", digest("b"), "")
	promotedElsewhere.PullSpec = "evil.example/org/op@" + digest("b")
	withImage := request("op", digest("a"), "op-build-1")
	withImage.Image = "quay.io/org/op"
	imageElsewhere := withImage
	imageElsewhere.Image = "evil.example/org/op"
	imageOnly := request("op", digest("a"), "op-build-1")
	imageOnly.PullSpec, imageOnly.Image = "", "evil.example/org/op"

	for _, c := range []struct {
		name   string
		req    Request
		source string // "" when refused
		reason string
	}{
		{"the build run", request("op", digest("a"), "op-build-1"), SourceBuildRun, ""},
		{"the build run, with its UID and start", withTime, SourceBuildRun, ""},
		{"the Component's last promoted image, no run named", request("op", digest("b"), ""), SourceComponentImage, ""},
		{"the Component's image when the run was pruned", request("op", digest("b"), "op-build-pruned"), SourceComponentImage, ""},
		{"a Snapshot", request("op", digest("c"), "op-build-pruned"), SourceSnapshot, ""},
		{"a digest nobody built", request("op", digest("9"), ""), "", "no build of op in tenant produced"},
		{"a run of another component", request("op", digest("e"), "other-build"), "", "is of component \"other\""},
		{"a failed run", request("op", digest("f"), "op-build-failed"), "", "did not succeed"},
		{"a run in another namespace", request("op", digest("d"), "op-build-x"), "", "does not exist"},
		{"a run reporting another digest", request("op", digest("9"), "op-build-1"), "", "reports IMAGE_DIGEST"},
		{"a real build claimed with a forged UID", wrongUID, "", "has UID uid-op-build-1, not uid-forged"},
		{"a real build claimed later than it started", later, "", "started at 2026-05-01T10:00:00Z"},
		{"a real digest pinned to another repository", otherRepo, "", "not to evil.example/org/op"},
		{"a promoted digest pinned to another repository", promotedElsewhere, "", "no build of op"},
		{"a pull spec pinning another digest", inconsistent, "", "does not pin digest"},
		{"the build run, with its image", withImage, SourceBuildRun, ""},
		{"an image its pull spec does not name", imageElsewhere, "", `image "evil.example/org/op" is not the repository`},
		{"a real digest claimed of another image", imageOnly, "", "not to evil.example/org/op"},
		{"another namespace named", otherClaim, "", `names namespace "elsewhere"`},
		{"not a digest", request("op", "sha256:short", ""), "", "is not a sha256 digest"},
		{"a component that does not exist", request("ghost", digest("a"), ""), "", "Component ghost does not exist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := verify(c.req)
			if c.source != "" {
				require.True(t, v.Verified, v.Reason)
				require.Equal(t, c.source, v.Source)
				return
			}
			require.False(t, v.Verified, "verified by %s %s", v.Source, v.Evidence)
			require.Contains(t, v.Reason, c.reason)
		})
	}
}

// A refusal leaves one Warning Event on its subject, however often the build is
// redelivered; a verified build leaves none.
func TestRefusalRecordsOneWarningEvent(t *testing.T) {
	comp := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "bundle", Namespace: ns, UID: "bundle-uid"}}
	verify, k := verifier(t, comp, buildRun("op-build-1", "op", digest("a")))
	require.True(t, verify(request("op", digest("a"), "op-build-1")).Verified)

	forged := request("op", digest("9"), "")
	for range 2 {
		require.False(t, verify(forged).Verified)
	}
	onComponent := forged
	onComponent.Workflow, onComponent.Subject = "nudge/tenant/x/bundle", Subject{Kind: KindComponent, Name: "bundle"}
	require.False(t, verify(onComponent).Verified)

	var evs corev1.EventList
	require.NoError(t, k.List(context.Background(), &evs))
	require.Len(t, evs.Items, 2, "one per refusing workflow, none for the verified build")
	by := map[string]corev1.Event{}
	for _, e := range evs.Items {
		require.Equal(t, EventReason, e.Reason)
		require.Equal(t, corev1.EventTypeWarning, e.Type)
		require.Contains(t, e.Message, digest("9"))
		require.Contains(t, e.Message, "no build of op in tenant produced")
		by[e.InvolvedObject.Kind] = e
	}
	require.Equal(t, "g", by[KindChangeGroup].InvolvedObject.Name)
	require.Equal(t, "cg-uid", string(by[KindChangeGroup].InvolvedObject.UID))
	require.Equal(t, "appstudio.redhat.com/v1alpha1", by[KindChangeGroup].InvolvedObject.APIVersion)
	require.Equal(t, "bundle-uid", string(by[KindComponent].InvolvedObject.UID), "kubectl describe finds it by the Component's UID")
}

// Workflows call the activity by method value: its Go name is the registered name.
func TestActivityNameIsTheMethodName(t *testing.T) {
	var a *Activities
	name := runtime.FuncForPC(reflect.ValueOf(a.VerifyBuild).Pointer()).Name()
	require.True(t, strings.HasSuffix(strings.TrimSuffix(name, "-fm"), "."+ActivityName), name)
}

// A build a ChangeGroup collected and hands back after the pruner deleted its run
// (the Component moved on, no Snapshot holds it) is proven by the group's status,
// which only nudgeflow writes; a group that collected another digest, or a
// hand-back that names no group, proves nothing.
func TestHandedBackBuildIsProvenByItsGroup(t *testing.T) {
	comp := &mirrorv1alpha1.Component{ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: ns},
		Spec:   mirrorv1alpha1.ComponentSpec{ContainerImage: "quay.io/org/op"},
		Status: mirrorv1alpha1.ComponentStatus{LastPromotedImage: "quay.io/org/op@" + digest("b")}}
	group := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: ns},
		Status: appstudiov1alpha1.ChangeGroupStatus{Components: []appstudiov1alpha1.ComponentStatus{
			{Name: "op", NewBuild: digest("a"), NewBuildPullSpec: "quay.io/org/op@" + digest("a")}}}}
	verify, _ := verifier(t, comp, group)

	handedBack := request("op", digest("a"), "op-on-push-pruned")
	handedBack.HandedBackBy = "g"
	v := verify(handedBack)
	require.True(t, v.Verified, v.Reason)
	require.Equal(t, sourceChangeGroup, v.Source)

	require.False(t, verify(request("op", digest("a"), "op-on-push-pruned")).Verified, "no group named: nothing proves it")
	other := request("op", digest("d"), "op-on-push-pruned")
	other.HandedBackBy = "g"
	require.False(t, verify(other).Verified, "the group collected another digest")
	gone := handedBack
	gone.HandedBackBy = "no-such-group"
	require.Contains(t, verify(gone).Reason, "ChangeGroup no-such-group does not exist")
}
