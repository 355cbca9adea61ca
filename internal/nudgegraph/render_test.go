package nudgegraph

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
)

// Batched targets are marked in every format, with their policy (defaults filled).
func TestRenderMarksBatchedTargets(t *testing.T) {
	quorum := int32(2)
	v := View{Namespace: "tenant",
		Nudges: []Edge{{From: "a", To: "bundle"}, {From: "b", To: "bundle"}, {From: "a", To: "app"}},
		Batching: []konfluxv1alpha1.BatchingPolicy{{Target: "bundle", Window: &metav1.Duration{Duration: 10 * time.Minute},
			Release: konfluxv1alpha1.ReleaseQuorum, Quorum: &quorum}},
	}
	want := "batched: window 10m0s, maxWait 24h, release quorum 2"
	for _, f := range Formats {
		var out bytes.Buffer
		if err := Render(&out, f, v); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s does not mark the batched target with %q:\n%s", f, want, out.String())
		}
		if strings.Count(out.String(), "batched:") != 1 {
			t.Errorf("%s marks more than the one batched target:\n%s", f, out.String())
		}
	}
	var out bytes.Buffer
	if err := Render(&out, JSON, v); err != nil {
		t.Fatal(err)
	}
	var g JSONGraph
	if err := json.Unmarshal(out.Bytes(), &g); err != nil {
		t.Fatal(err)
	}
	for _, c := range g.Components {
		if (c.Batched != "") != (c.Name == "bundle") {
			t.Errorf("component %s batched=%q", c.Name, c.Batched)
		}
	}
}
