package releases_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/releases"
)

func rpa(ns, name, origin, data string) mirrorv1alpha1.ReleasePlanAdmission {
	a := mirrorv1alpha1.ReleasePlanAdmission{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: mirrorv1alpha1.ReleasePlanAdmissionSpec{Origin: origin}}
	if data != "" {
		a.Spec.Data = &runtime.RawExtension{Raw: []byte(data)}
	}
	return a
}

// Only admissions whose origin is the namespace count; the redhat-prod and
// redhat-pending names gain their public registry; duplicates across admissions
// are listed once; a broken admission is reported and the others still read.
func TestRepositoriesAsBuildServiceReadsThem(t *testing.T) {
	got, problems := releases.FromAdmissions([]mirrorv1alpha1.ReleasePlanAdmission{
		rpa("managed-b", "stage", "tenant", `{"mapping":{"components":[
			{"name":"operand","repositories":[{"url":"quay.io/redhat-pending/org----operand"}]}]}}`),
		rpa("managed-a", "prod", "tenant", `{"mapping":{"components":[
			{"name":"operand","repositories":[{"url":"quay.io/redhat-prod/org----operand","tags":["{{ git_sha }}"]},{"url":""}]},
			{"name":"other","repositories":[{"url":"registry.example.com/other"}]},
			{"name":"operand","repositories":[{"url":"quay.io/redhat-prod/org----operand"}]}]}}`),
		rpa("managed-a", "elsewhere", "another-tenant", `{"mapping":{"components":[
			{"name":"operand","repositories":[{"url":"quay.io/nope/operand"}]}]}}`),
		rpa("managed-a", "broken", "tenant", `{"mapping":{"components":"not a list"}}`),
		rpa("managed-a", "no-data", "tenant", ""),
	}, "tenant", "operand", "other", "bundle")
	require.Equal(t, map[string][]string{
		"operand": {"quay.io/redhat-prod/org----operand", "registry.redhat.io/org/operand",
			"quay.io/redhat-pending/org----operand", "registry.stage.redhat.io/org/operand"},
		"other": {"registry.example.com/other"},
	}, got)
	require.Len(t, problems, 1)
	require.Equal(t, "managed-a/broken", problems[0].Admission)
}

func TestPublicName(t *testing.T) {
	require.Equal(t, "registry.redhat.io/rhoai/odh-operator", releases.PublicName("quay.io/redhat-prod/rhoai----odh-operator"))
	require.Equal(t, "registry.stage.redhat.io/a/b", releases.PublicName("quay.io/redhat-pending/a----b"))
	require.Equal(t, "", releases.PublicName("quay.io/redhat-user-workloads/t/a"))
}

// A cluster without release-service (no ReleasePlanAdmission kind) has no
// distribution repositories, and that is not an error.
func TestNoReleaseServiceMeansNoDistributionRepositories(t *testing.T) {
	k8s := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	got, problems, err := releases.Repositories(context.Background(), k8s, "tenant", "operand")
	require.NoError(t, err)
	require.Empty(t, got)
	require.Empty(t, problems)
}

// An admission with one field of the wrong type still gives the mappings that
// decode, as build-service's json.Unmarshal does; unreadable JSON gives none. Both
// are reported.
func TestMalformedFieldKeepsTheMappingsThatDecode(t *testing.T) {
	got, problems := releases.FromAdmissions([]mirrorv1alpha1.ReleasePlanAdmission{
		rpa("managed", "one-bad-field", "tenant", `{"mapping":{"components":[
			{"name":"operand","repositories":[{"url":"registry.example.com/operand"}]},
			{"name":"bundle","repositories":"registry.example.com/bundle"},
			{"name":"other","repositories":[{"url":42},{"url":"registry.example.com/other"}]}]}}`),
		rpa("managed", "not-json", "tenant", `{"mapping":`),
	}, "tenant", "operand", "bundle", "other")
	require.Equal(t, map[string][]string{
		"operand": {"registry.example.com/operand"},
		"other":   {"registry.example.com/other"},
	}, got)
	require.Len(t, problems, 2)
	require.Equal(t, "managed/not-json", problems[0].Admission)
	require.Equal(t, "managed/one-bad-field", problems[1].Admission)
}
