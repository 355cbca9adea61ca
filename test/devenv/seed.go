package devenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/nudgeflow/nudgeflow/activities/renovate"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	mirrorv1beta2 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1beta2"
	"github.com/nudgeflow/nudgeflow/internal/forge"
	"github.com/nudgeflow/nudgeflow/internal/ownership/ownershiptest"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
	glemu "github.com/nudgeflow/nudgeflow/test/forgeemu/gitlab"
	"github.com/nudgeflow/nudgeflow/test/localenv"
	"github.com/nudgeflow/nudgeflow/test/ociregistry"
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

// The third bundle lives on the real Gitea server that `nudgeflow-dev dev --forgejo`
// starts (repository demo/operator-bundle-forgejo, git-provider: forgejo), nudged by
// its own two components. Without --forgejo none of it is seeded.
const ForgejoBundle = "operator-bundle-forgejo"

// ForgejoNudgers nudge ForgejoBundle.
var ForgejoNudgers = []string{"fj-operand-a", "fj-operand-b"}

// forgejoSecret holds the Gitea bot's token, narrowed to the bundle's repository:
// the GitHub emulator's Secret names the same host (127.0.0.1, label values hold
// no port) with another token, and the exact repository wins the lookup.
const forgejoSecret = "forgejo-credentials"

// ImageOf is a component's image repository (where its builds push) in the dev
// stack's registry ("127.0.0.1:port"): Renovate looks its tags up there.
func ImageOf(registry, component string) string { return registry + "/nudgeflow-demo/" + component }

// ReleasesNamespace is the managed namespace whose ReleasePlanAdmission releases the
// demo's operands, as on a real tenant.
const ReleasesNamespace = "demo-releases"

// released are the components the demo releases to a distribution repository;
// the bundle references them there, as a real bundle references released operands.
var released = []string{"operand-a", "operand-b", "operand-c"}

// ReferenceOf is the repository the bundle's CSV references a component by: the
// public name of its distribution repository for the released operands (mapped from
// quay.io/redhat-prod/nudgeflow-demo----<c> as build-service maps it; Renovate's
// registry alias sends its lookups to the built repository), the built repository
// for the operator.
func ReferenceOf(registry, component string) string {
	if slices.Contains(released, component) {
		return "registry.redhat.io/nudgeflow-demo/" + component
	}
	return ImageOf(registry, component)
}

// DigestOf is the digest of a component's n-th simulated build (0: the one the
// bundle references when the demo starts): the digest of the image its seed
// names (ociregistry.SeededImage), which `nudgeflow-dev dev build` pushes.
func DigestOf(ns, component string, n int) string { return seededDigest(buildSeed(ns, component, n)) }

// buildSeed names the image of a component's n-th build.
func buildSeed(ns, component string, n int) string { return fmt.Sprintf("%s/%s-%d", ns, component, n) }

func seededDigest(seed string) string {
	d, err := ociregistry.SeededDigest(seed)
	if err != nil {
		// An image of one in-memory layer: only a broken build of the library fails here.
		panic(err)
	}
	return d
}

// seedForge creates the demo's repositories unless they exist (loaded from a
// previous run).
func seedForge(emu *githubemu.Server, registry string) {
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
			fmt.Fprintf(&csv, "  - name: %s\n    image: %s@%s\n", c, ReferenceOf(registry, c), DigestOf(DemoNamespace, c, 0))
		}
		emu.CreateRepo(DemoNamespace, Bundle, defaultBranch, map[string]string{
			CSVPath:                csv.String(),
			"bundle.Containerfile": "FROM scratch\nCOPY bundle/manifests /manifests/\n",
			"README.md":            "# operator bundle\n\nThe CSV lists the operator's and operands' images by digest.\n",
		})
	}
}

// seedGitLab creates the second bundle's project unless it exists.
func seedGitLab(gl *glemu.Server, registry string) {
	if gl.HasProject(DemoNamespace, GitLabBundle) {
		return
	}
	var csv strings.Builder
	csv.WriteString(csvDescription)
	for _, c := range GitLabNudgers {
		fmt.Fprintf(&csv, "  - name: %s\n    image: %s@%s\n", c, ImageOf(registry, c), DigestOf(DemoNamespace, c, 0))
	}
	gl.CreateProject(DemoNamespace, GitLabBundle, defaultBranch, map[string]string{
		CSVPath:     csv.String(),
		"README.md": "# operator bundle on GitLab\n\nThe CSV lists the operands' images by digest.\n",
	})
}

// seedForgejo creates the third bundle's repository on the Gitea server unless it
// exists (a resumed server keeps it).
func seedForgejo(f *localenv.Forgejo, registry string) error {
	var ae *localenv.APIError
	err := f.API(http.MethodGet, "/repos/"+DemoNamespace+"/"+ForgejoBundle, f.AdminToken, nil, nil)
	if err == nil {
		return nil
	}
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		return fmt.Errorf("looking up %s/%s on Forgejo: %w", DemoNamespace, ForgejoBundle, err)
	}
	var csv strings.Builder
	csv.WriteString(csvDescription)
	for _, c := range ForgejoNudgers {
		fmt.Fprintf(&csv, "  - name: %s\n    image: %s@%s\n", c, ImageOf(registry, c), DigestOf(DemoNamespace, c, 0))
	}
	if err := f.CreateRepo(DemoNamespace, ForgejoBundle, defaultBranch, map[string]string{
		CSVPath:     csv.String(),
		"README.md": "# operator bundle on Forgejo\n\nThe CSV lists the operands' images by digest.\n",
	}); err != nil {
		return fmt.Errorf("seeding Forgejo: %w", err)
	}
	// Renovate applies only labels the repository has; a Konflux tenant creates
	// the nudge label (GitHub and GitLab create a label on first use).
	if err := f.API(http.MethodPost, "/repos/"+DemoNamespace+"/"+ForgejoBundle+"/labels", f.AdminToken,
		map[string]string{"name": renovate.NudgeLabel, "color": "#00aabb"}, nil); err != nil {
		return fmt.Errorf("creating the nudge label on Forgejo: %w", err)
	}
	return nil
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

// seedOptions are the forges seedCluster points the demo at.
type seedOptions struct {
	forgeURL, gitlabURL, botToken string
	// registry is the dev stack's image registry, "127.0.0.1:port".
	registry string
	// forgejoURL and forgejoBotToken are set with --forgejo only.
	forgejoURL, forgejoBotToken string
}

// bundleOn are the Components of a bundle on another forge (provider at bundleURL)
// and its nudgers, whose sources are at nudgersURL.
func bundleOn(ns, bundle string, nudgers []string, provider, bundleURL, nudgersURL, registry string) []ctrlclient.Object {
	var objs []ctrlclient.Object
	for _, c := range append([]string{bundle}, nudgers...) {
		comp := &mirrorv1alpha1.Component{
			ObjectMeta: metav1.ObjectMeta{Name: c, Namespace: ns},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: c, Application: "demo-operator", ContainerImage: ImageOf(registry, c),
				Source: mirrorv1alpha1.ComponentSource{GitSource: &mirrorv1alpha1.GitSource{URL: nudgersURL + "/" + ns + "/" + c, Revision: defaultBranch}}},
		}
		if c == bundle {
			comp.Annotations = map[string]string{mirrorv1alpha1.AnnotationGitProvider: provider}
			comp.Spec.Source.GitSource.URL = bundleURL + "/" + ns + "/" + c
		}
		objs = append(objs, comp)
	}
	return objs
}

// seedCluster creates what the demo namespace needs unless it exists: the forge
// credentials, the Components, the ComponentGroup gating the operator and the
// NudgeConfig. With Forgejo it also adds the third bundle, its nudgers, their
// edges and the Gitea bot's Secret, also to a namespace seeded without them.
func seedCluster(ctx context.Context, kube ctrlclient.Client, o seedOptions) error {
	ns := DemoNamespace
	forgeURL, gitlabURL, botToken, registry := o.forgeURL, o.gitlabURL, o.botToken, o.registry
	objs := []ctrlclient.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		scmSecret(ns, forgeSecret, forgeBotUser, botToken),
	}
	for _, c := range append([]string{Bundle}, Nudgers...) {
		objs = append(objs, &mirrorv1alpha1.Component{
			// The emulator speaks GitHub's API; its host does not say so.
			ObjectMeta: metav1.ObjectMeta{Name: c, Namespace: ns, Annotations: map[string]string{mirrorv1alpha1.AnnotationGitProvider: "github"}},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: c, Application: "demo-operator", ContainerImage: ImageOf(registry, c),
				Source: mirrorv1alpha1.ComponentSource{GitSource: &mirrorv1alpha1.GitSource{
					URL: forgeURL + "/" + ns + "/" + c, Revision: defaultBranch}}},
		})
	}
	// The GitLab emulator's and the Gitea server's loopback hosts do not say which
	// forge they are: the bundles' annotations do. Their nudgers' sources are on the
	// GitHub emulator, as the first bundle's.
	objs = append(objs, bundleOn(ns, GitLabBundle, GitLabNudgers, "gitlab", gitlabURL, forgeURL, registry)...)
	if o.forgejoURL != "" {
		objs = append(objs, bundleOn(ns, ForgejoBundle, ForgejoNudgers, "forgejo", o.forgejoURL, forgeURL, registry)...)
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
	var forgejoEdges []konfluxv1alpha1.NudgeRelationship
	if o.forgejoURL != "" {
		for _, c := range ForgejoNudgers {
			forgejoEdges = append(forgejoEdges, konfluxv1alpha1.NudgeRelationship{From: c, To: ForgejoBundle, Mode: konfluxv1alpha1.ModeImmediate})
		}
		nc.Spec.Nudges = append(nc.Spec.Nudges, forgejoEdges...)
	}
	objs = append(objs, nc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ReleasesNamespace}}, releasePlanAdmission())
	if err := createOnboarded(ctx, kube, objs); err != nil {
		return err
	}
	if o.forgejoURL != "" {
		if err := seedForgejoAccess(ctx, kube, nc.Name, forgejoEdges, o.forgejoBotToken); err != nil {
			return err
		}
	}
	// The bundles reference digest 0 of every nudger: that is what they last promoted.
	nudgers := append(slices.Clone(Nudgers), GitLabNudgers...)
	if o.forgejoURL != "" {
		nudgers = append(nudgers, ForgejoNudgers...)
	}
	return promoteDigestZero(ctx, kube, ns, registry, nudgers)
}

// createOnboarded creates each object unless it exists, and onboards each
// Component as build-service does: the Pipelines as Code Repository of its
// repository makes the namespace its owner (nudgeflow writes only to repositories
// a namespace owns). Also on a restart of an older state.
func createOnboarded(ctx context.Context, kube ctrlclient.Client, objs []ctrlclient.Object) error {
	for _, o := range objs {
		if err := kube.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("seeding %T %s/%s: %w", o, o.GetNamespace(), o.GetName(), err)
		}
		if c, ok := o.(*mirrorv1alpha1.Component); ok {
			if err := ownershiptest.Onboard(ctx, kube, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// promoteDigestZero sets the lastPromotedImage of each component that has none to
// its digest 0, which the bundles reference when seeded.
func promoteDigestZero(ctx context.Context, kube ctrlclient.Client, ns, registry string, components []string) error {
	for _, c := range components {
		var comp mirrorv1alpha1.Component
		if err := kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: c}, &comp); err != nil {
			return fmt.Errorf("reading component %s/%s: %w", ns, c, err)
		}
		if comp.Status.LastPromotedImage != "" {
			continue
		}
		comp.Status.LastPromotedImage = ImageOf(registry, c) + "@" + DigestOf(ns, c, 0)
		if err := kube.Status().Update(ctx, &comp); err != nil {
			return fmt.Errorf("setting lastPromotedImage of %s/%s: %w", ns, c, err)
		}
	}
	return nil
}

// scmSecret is the basic-auth Secret of a forge token for the loopback host
// (label values hold no port, so it names every local forge).
func scmSecret(ns, name, user, token string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			forge.LabelCredentials: "scm", forge.LabelSCMHost: "127.0.0.1"}},
		Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{"username": []byte(user), "password": []byte(token)},
	}
}

// seedForgejoAccess adds the Forgejo edges to a NudgeConfig seeded by a start
// without --forgejo, and writes the Gitea bot's Secret: created, or updated when
// the token changed (a server folder deleted and made anew).
func seedForgejoAccess(ctx context.Context, kube ctrlclient.Client, ncName string, edges []konfluxv1alpha1.NudgeRelationship, botToken string) error {
	ns := DemoNamespace
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var nc konfluxv1alpha1.NudgeConfig
		if err := kube.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: ncName}, &nc); err != nil {
			return err
		}
		missing := false
		for _, e := range edges {
			if !slices.ContainsFunc(nc.Spec.Nudges, func(n konfluxv1alpha1.NudgeRelationship) bool { return n.From == e.From && n.To == e.To }) {
				nc.Spec.Nudges, missing = append(nc.Spec.Nudges, e), true
			}
		}
		if !missing {
			return nil
		}
		return kube.Update(ctx, &nc)
	})
	if err != nil {
		return fmt.Errorf("adding the Forgejo bundle's edges to NudgeConfig %s/%s: %w", ns, ncName, err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: forgejoSecret, Namespace: ns}}
	if _, err := controllerutil.CreateOrUpdate(ctx, kube, sec, func() error {
		sec.Labels = map[string]string{forge.LabelCredentials: "scm", forge.LabelSCMHost: "127.0.0.1"}
		sec.Annotations = map[string]string{forge.AnnotationRepository: ns + "/" + ForgejoBundle}
		sec.Type = corev1.SecretTypeBasicAuth
		sec.Data = map[string][]byte{"username": []byte(localenv.ForgejoBot), "password": []byte(botToken)}
		return nil
	}); err != nil {
		return fmt.Errorf("writing Secret %s/%s: %w", ns, forgejoSecret, err)
	}
	return nil
}
