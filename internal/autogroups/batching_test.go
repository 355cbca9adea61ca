package autogroups

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	"github.com/nudgeflow/nudgeflow/internal/kube"
)

func config(nudgers ...string) *konfluxv1alpha1.NudgeConfig {
	nc := &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName, Namespace: "ns", UID: "nc-uid"}}
	for _, n := range nudgers {
		nc.Spec.Nudges = append(nc.Spec.Nudges, konfluxv1alpha1.NudgeRelationship{From: n, To: "bundle"})
	}
	nc.Spec.Batching = []konfluxv1alpha1.BatchingPolicy{{Target: "bundle", Window: &metav1.Duration{Duration: time.Minute}}}
	return nc
}

// Builds of every nudger arriving at once open one batch, which all of them join;
// its spec carries the policy with the defaults filled.
func TestConcurrentBuildsOpenOneBatch(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).Build()
	o := &Opener{Kube: c, Live: c}
	nudgers := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	nc := config(nudgers...)
	names := make([]string, len(nudgers))
	var wg sync.WaitGroup
	for i, n := range nudgers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cg, err := o.Holder(context.Background(), nc, n, "bundle")
			if err != nil || cg == nil {
				t.Errorf("%s: %v %v", n, cg, err)
				return
			}
			names[i] = cg.Name
		}()
	}
	wg.Wait()
	var list appstudiov1alpha1.ChangeGroupList
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("%d groups opened, want 1", len(list.Items))
	}
	cg := list.Items[0]
	for i, n := range names {
		if n != cg.Name {
			t.Errorf("%s joined %q, want %q", nudgers[i], n, cg.Name)
		}
	}
	if !grouplookup.IsAutomatic(&cg) || len(cg.Spec.NudgingComponents) != len(nudgers) || cg.OwnerReferences[0].UID != "nc-uid" {
		t.Errorf("not the automatic group of every nudger: %+v", cg)
	}
	a := cg.Spec.AutoRelease
	if a == nil || a.Window.Duration != time.Minute || a.MaxWait.Duration != 24*time.Hour || a.Policy != appstudiov1alpha1.AutoReleaseWindow {
		t.Errorf("policy not carried with defaults: %+v", a)
	}
}

// A nudger added to the NudgeConfig after the batch opened joins it; members a
// collecting manual group holds are left out of a new batch; a target without a
// policy has no batch.
func TestJoinAndManualMembers(t *testing.T) {
	manual := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Name: "manual", Namespace: "ns"},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: "bundle", NudgingComponents: []appstudiov1alpha1.NudgingComponentRef{{Name: "a"}}}}
	c := fake.NewClientBuilder().WithScheme(kube.NewScheme()).WithObjects(manual).Build()
	o := &Opener{Kube: c, Live: c}
	ctx := context.Background()
	if cg, err := o.Holder(ctx, config("a", "b", "c"), "a", "bundle"); err != nil || cg == nil || cg.Name != "manual" {
		t.Fatalf("a is the manual group's: %v %v", cg, err)
	}
	batch, err := o.Holder(ctx, config("a", "b", "c"), "b", "bundle")
	if err != nil || batch == nil || !grouplookup.IsAutomatic(batch) {
		t.Fatalf("b opens a batch: %v %v", batch, err)
	}
	if got := len(batch.Spec.NudgingComponents); got != 2 {
		t.Fatalf("the batch leaves a to the manual group: %d members", got)
	}
	joined, err := o.Holder(ctx, config("a", "b", "c", "d"), "d", "bundle")
	if err != nil || joined == nil || joined.Name != batch.Name || !grouplookup.Holds(joined, "d", "bundle") {
		t.Fatalf("d, added later, joins the open batch: %v %v", joined, err)
	}
	nc := config("a")
	nc.Spec.Batching = nil
	if cg, err := o.Holder(ctx, nc, "x", "bundle"); err != nil || cg != nil {
		t.Fatalf("not batched, not held: %v %v", cg, err)
	}
}
