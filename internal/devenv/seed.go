package devenv

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/activities/forge"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	githubemu "github.com/nudgeflow/nudgeflow/internal/forgeemu/github"
	glemu "github.com/nudgeflow/nudgeflow/internal/forgeemu/gitlab"
)

// The demo namespace: an operator, its three operands and the OLM bundle they all
// nudge. The operands' edges are immediate; the operator's is validated, gated by
// the ComponentGroup that tests the operator.
const (
	DemoNamespace  = "demo"
	Bundle         = "operator-bundle"
	Operator       = "operator"
	OperatorTests  = "operator-tests"
	CSVPath        = "bundle/manifests/operator.clusterserviceversion.yaml"
	imageRegistry  = "quay.io/nudgeflow-demo/"
	forgeSecret    = "forge-credentials"
	forgeBotUser   = "nudgeflow"
	defaultBranch  = "main"
	csvDescription = "kind: ClusterServiceVersion\nmetadata:\n  name: demo-operator.v0.1.0\nspec:\n  relatedImages:\n"
)

// Nudgers are the components that nudge the bundle, the operator first.
var Nudgers = []string{Operator, "operand-a", "operand-b", "operand-c"}

// The second bundle lives on the GitLab emulator (project demo/operator-bundle-gitlab,
// git-provider: gitlab) and is nudged by its own two components, so a ChangeGroup
// on it shows a draft merge request without touching the GitHub bundle's story.
const GitLabBundle = "operator-bundle-gitlab"

// GitLabNudgers nudge GitLabBundle.
var GitLabNudgers = []string{"gl-operand-a", "gl-operand-b"}

// ImageOf is a component's image repository (where its builds push).
func ImageOf(component string) string { return imageRegistry + component }

// ReleasesNamespace is the managed namespace whose ReleasePlanAdmission releases the
// demo's operands, as on a real tenant.
const ReleasesNamespace = "demo-releases"

// released are the components the demo releases to a distribution repository;
// the bundle references them there, as a real bundle references released operands.
var released = []string{"operand-a", "operand-b", "operand-c"}

// ReferenceOf is the repository the bundle's CSV references a component by: the
// public name of its distribution repository for the released operands (mapped from
// quay.io/redhat-prod/nudgeflow-demo----<c> as build-service maps it), the built
// repository for the operator.
func ReferenceOf(component string) string {
	if slices.Contains(released, component) {
		return "registry.redhat.io/nudgeflow-demo/" + component
	}
	return ImageOf(component)
}

// DigestOf is the digest of a component's n-th simulated build (0: the one the
// bundle references when the demo starts).
func DigestOf(ns, component string, n int) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(fmt.Sprintf("%s/%s-%d", ns, component, n))))
}

// seedForge creates the demo's repositories unless they exist (loaded from a
// previous run).
func seedForge(emu *githubemu.Server) {
	for _, c := range Nudgers {
		if !emu.HasRepo(DemoNamespace, c) {
			emu.CreateRepo(DemoNamespace, c, defaultBranch, map[string]string{
				"Containerfile": "FROM registry.access.redhat.com/ubi9/ubi-minimal\nCOPY . /app\n",
				"README.md":     "# " + c + "\n\nPart of the nudgeflow demo operator.\n",
			})
		}
	}
	if !emu.HasRepo(DemoNamespace, Bundle) {
		var csv strings.Builder
		csv.WriteString(csvDescription)
		for _, c := range Nudgers {
			fmt.Fprintf(&csv, "  - name: %s\n    image: %s@%s\n", c, ReferenceOf(c), DigestOf(DemoNamespace, c, 0))
		}
		emu.CreateRepo(DemoNamespace, Bundle, defaultBranch, map[string]string{
			CSVPath:                csv.String(),
			"bundle.Containerfile": "FROM scratch\nCOPY bundle/manifests /manifests/\n",
			"README.md":            "# operator bundle\n\nThe CSV lists the operator's and operands' images by digest.\n",
		})
	}
}

// seedGitLab creates the second bundle's project unless it exists.
func seedGitLab(gl *glemu.Server) {
	if gl.HasProject(DemoNamespace, GitLabBundle) {
		return
	}
	var csv strings.Builder
	csv.WriteString(csvDescription)
	for _, c := range GitLabNudgers {
		fmt.Fprintf(&csv, "  - name: %s\n    image: %s@%s\n", c, ImageOf(c), DigestOf(DemoNamespace, c, 0))
	}
	gl.CreateProject(DemoNamespace, GitLabBundle, defaultBranch, map[string]string{
		CSVPath:     csv.String(),
		"README.md": "# operator bundle on GitLab\n\nThe CSV lists the operands' images by digest.\n",
	})
}

// releasePlanAdmission admits the demo's releases in the managed namespace and maps
// the operands to their distribution repositories.
func releasePlanAdmission() *mirrorv1alpha1.ReleasePlanAdmission {
	type repository struct {
		URL string `json:"url"`
	}
	type component struct {
		Name         string       `json:"name"`
		Repositories []repository `json:"repositories"`
	}
	var data struct {
		Mapping struct {
			Components []component `json:"components"`
		} `json:"mapping"`
	}
	for _, c := range released {
		data.Mapping.Components = append(data.Mapping.Components, component{Name: c,
			Repositories: []repository{{URL: "quay.io/redhat-prod/nudgeflow-demo----" + c}}})
	}
	raw, _ := json.Marshal(data) // plain strings: cannot fail
	return &mirrorv1alpha1.ReleasePlanAdmission{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-operator", Namespace: ReleasesNamespace},
		Spec: mirrorv1alpha1.ReleasePlanAdmissionSpec{Origin: DemoNamespace, Applications: []string{"demo-operator"},
			Data: &runtime.RawExtension{Raw: raw}},
	}
}

// seedCluster creates what the demo namespace needs unless it exists: the forge
// credentials, the Components, the ComponentGroup gating the operator and the
// NudgeConfig.
func seedCluster(ctx context.Context, kube ctrlclient.Client, forgeURL, gitlabURL, botToken string) error {
	ns := DemoNamespace
	objs := []ctrlclient.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: forgeSecret, Namespace: ns, Labels: map[string]string{
				forge.LabelCredentials: "scm", forge.LabelSCMHost: "127.0.0.1"}},
			Type: corev1.SecretTypeBasicAuth,
			Data: map[string][]byte{"username": []byte(forgeBotUser), "password": []byte(botToken)},
		},
	}
	for _, c := range append([]string{Bundle}, Nudgers...) {
		objs = append(objs, &mirrorv1alpha1.Component{
			// The emulator speaks GitHub's API; its host does not say so.
			ObjectMeta: metav1.ObjectMeta{Name: c, Namespace: ns, Annotations: map[string]string{mirrorv1alpha1.AnnotationGitProvider: "github"}},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: c, Application: "demo-operator", ContainerImage: ImageOf(c),
				Source: mirrorv1alpha1.ComponentSource{GitSource: &mirrorv1alpha1.GitSource{
					URL: forgeURL + "/" + ns + "/" + c, Revision: defaultBranch}}},
		})
	}
	for _, c := range append([]string{GitLabBundle}, GitLabNudgers...) {
		comp := &mirrorv1alpha1.Component{
			ObjectMeta: metav1.ObjectMeta{Name: c, Namespace: ns},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: c, Application: "demo-operator", ContainerImage: ImageOf(c),
				Source: mirrorv1alpha1.ComponentSource{GitSource: &mirrorv1alpha1.GitSource{URL: forgeURL + "/" + ns + "/" + c, Revision: defaultBranch}}},
		}
		if c == GitLabBundle {
			// The GitLab emulator's host does not say GitLab: the annotation does.
			comp.Annotations = map[string]string{mirrorv1alpha1.AnnotationGitProvider: "gitlab"}
			comp.Spec.Source.GitSource.URL = gitlabURL + "/" + ns + "/" + c
		}
		objs = append(objs, comp)
	}
	objs = append(objs, &mirrorv1beta2.ComponentGroup{
		ObjectMeta: metav1.ObjectMeta{Name: OperatorTests, Namespace: ns},
		Spec:       mirrorv1beta2.ComponentGroupSpec{Components: []mirrorv1beta2.ComponentGroupMember{{Name: Operator}}},
	})
	nc := &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName, Namespace: ns}}
	for _, c := range Nudgers {
		edge := konfluxv1alpha1.NudgeRelationship{From: c, To: Bundle, Mode: konfluxv1alpha1.ModeImmediate}
		if c == Operator {
			edge.Mode, edge.GatingGroup = konfluxv1alpha1.ModeValidated, OperatorTests
		}
		nc.Spec.Nudges = append(nc.Spec.Nudges, edge)
	}
	for _, c := range GitLabNudgers {
		nc.Spec.Nudges = append(nc.Spec.Nudges, konfluxv1alpha1.NudgeRelationship{From: c, To: GitLabBundle, Mode: konfluxv1alpha1.ModeImmediate})
	}
	objs = append(objs, nc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ReleasesNamespace}}, releasePlanAdmission())
	for _, o := range objs {
		if err := kube.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("seeding %T %s/%s: %w", o, o.GetNamespace(), o.GetName(), err)
		}
	}
	// The bundles reference digest 0 of every nudger: that is what they last promoted.
	for _, c := range append(slices.Clone(Nudgers), GitLabNudgers...) {
		var comp mirrorv1alpha1.Component
		if err := kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: c}, &comp); err != nil {
			return fmt.Errorf("reading component %s: %w", c, err)
		}
		if comp.Status.LastPromotedImage != "" {
			continue
		}
		comp.Status.LastPromotedImage = ImageOf(c) + "@" + DigestOf(ns, c, 0)
		if err := kube.Status().Update(ctx, &comp); err != nil {
			return fmt.Errorf("setting lastPromotedImage of %s: %w", c, err)
		}
	}
	return nil
}
