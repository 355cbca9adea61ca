package changegroup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	githubemu "github.com/nudgeflow/nudgeflow/test/forgeemu/github"
)

// A bundle references its operands where they are released. Two operands
// are referenced by a distribution repository from a ReleasePlanAdmission (one of
// them through the registry.redhat.io name of a quay.io/redhat-prod repository, the
// other with a tag that must be kept), one by the repository it was built in, and one
// nowhere: the first three are rewritten, the fourth is flagged in the PR and the CR.
func TestDistributionRepositoriesAreRewrittenAndUnreferencedFlagged(t *testing.T) {
	members := []string{"operand-a", "operand-b", "operand-c", "operator"}
	s := newScenario(t, members...)
	ctx := context.Background()
	managed := s.w.Namespace(t)
	data := `{"mapping":{"components":[
		{"name":"operand-a","repositories":[{"url":"quay.io/redhat-prod/org----operand-a"}]},
		{"name":"operand-b","repositories":[{"url":"registry.example.com/released/operand-b"}]}]}}`
	require.NoError(t, s.w.Kube.Create(ctx, &mirrorv1alpha1.ReleasePlanAdmission{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant-releases", Namespace: managed},
		Spec:       mirrorv1alpha1.ReleasePlanAdmissionSpec{Origin: s.ns, Data: &runtime.RawExtension{Raw: []byte(data)}},
	}))
	csv := func(d func(c string) string) string {
		return "kind: ClusterServiceVersion\nspec:\n  relatedImages:\n" +
			"  - image: registry.redhat.io/org/operand-a@" + d("operand-a") + "\n" +
			"  - image: registry.example.com/released/operand-b:v1.2@" + d("operand-b") + "\n" +
			"  - image: quay.io/org/operator@" + d("operator") + "\n"
	}
	const csvPath = "bundle/manifests/operator.clusterserviceversion.yaml"
	_, err := shared.emu.HumanCommit(s.ns, "bundle", "main", githubemu.User{Login: "dev", Name: "Dev", Email: "dev@example.com"},
		map[string]string{csvPath: csv(func(c string) string { return digestOf(c, 0) })}, "reference operands where they are released")
	require.NoError(t, err)

	s.createGroup("g", members, 0)
	s.explainOnFailure("g")
	for _, c := range members {
		s.buildNow(c, 1)
	}
	cg := s.waitPhase("g", appstudiov1alpha1.PhaseReady)

	pr := s.draftlessPR()
	got, ok := shared.emu.FileAt(s.ns, "bundle", pr.Head, csvPath)
	require.True(t, ok)
	require.Equal(t, csv(func(c string) string { return digestOf(c, 1) }), got,
		"every reference is rewritten, by distribution or built repository, tags kept")
	require.Equal(t, 1, shared.emu.CIBuilds(s.ns, "bundle"))

	want := map[string]struct {
		state appstudiov1alpha1.ComponentState
		refs  []string
	}{
		"operand-a": {appstudiov1alpha1.ComponentReady, []string{"registry.redhat.io/org/operand-a"}},
		"operand-b": {appstudiov1alpha1.ComponentReady, []string{"registry.example.com/released/operand-b"}},
		"operand-c": {appstudiov1alpha1.ComponentNotReferenced, nil},
		"operator":  {appstudiov1alpha1.ComponentReady, []string{"quay.io/org/operator"}},
	}
	require.Len(t, cg.Status.Components, len(want))
	for _, c := range cg.Status.Components {
		require.Equal(t, want[c.Name].state, c.State, c.Name)
		require.Equal(t, want[c.Name].refs, c.References, c.Name)
	}
	require.Contains(t, cg.Status.Conditions[0].Message, "referenced nowhere in the nudged component's matched files (drop them or add a reference): operand-c")

	body, _ := shared.emu.PR(s.ns, "bundle", pr.Number)
	require.Contains(t, body.Body, "| registry.redhat.io/org/operand-a |")
	require.Contains(t, body.Body, "| ⚠️ not referenced |")
	require.Contains(t, body.Body, "**Not referenced:** `operand-c`")
	rows := 0
	for _, line := range strings.Split(body.Body, "\n") {
		if strings.HasPrefix(line, "| operand-") || strings.HasPrefix(line, "| operator") {
			rows++
		}
	}
	require.Equal(t, len(members), rows, fmt.Sprintf("one table row per member:\n%s", body.Body))

	require.NoError(t, shared.emu.MergePR(s.ns, "bundle", pr.Number))
	s.waitFor("g", "completed", 60*time.Second, func(cg *appstudiov1alpha1.ChangeGroup) bool {
		return cg.Status.Phase == appstudiov1alpha1.PhaseCompleted
	})
}
