package grouplookup

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
)

func group(name, uid, target string, members ...string) *appstudiov1alpha1.ChangeGroup {
	cg := &appstudiov1alpha1.ChangeGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name, UID: k8stypes.UID(uid)},
		Spec: appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: target}}
	for _, m := range members {
		cg.Spec.NudgingComponents = append(cg.Spec.NudgingComponents, appstudiov1alpha1.NudgingComponentRef{Name: m})
	}
	return cg
}

// A group admitted a moment ago holds before the cache has it; once the cache has
// it (same UID) it is counted once; an admitted group the API server never stored
// is forgotten after the TTL. The cache is read through the nudged-component index.
func TestIndexCoversAdmittedGroupsUntilTheCacheHasThem(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := appstudiov1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	other := group("other-bundle", "u0", "other", "operand")
	cache := fake.NewClientBuilder().WithScheme(scheme).WithObjects(other).
		WithIndex(&appstudiov1alpha1.ChangeGroup{}, NudgedField, func(o ctrlclient.Object) []string {
			cg := o.(*appstudiov1alpha1.ChangeGroup)
			return []string{nudgedKey(cg.Namespace, cg.Spec.NudgedComponent)}
		}).Build()
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	x := &Index{Cache: cache, Now: func() time.Time { return now }}
	ctx := context.Background()

	if cg, err := x.FindHolding(ctx, "tenant", "operand", "bundle"); err != nil || cg != nil {
		t.Fatalf("nothing holds yet: %v %v", cg, err)
	}
	fresh := group("g", "u1", "bundle", "operand")
	x.Admitted(fresh)
	if cg, err := x.FindHolding(ctx, "tenant", "operand", "bundle"); err != nil || cg == nil || cg.Name != "g" {
		t.Fatalf("the admitted group holds before the cache has it: %v %v", cg, err)
	}
	if err := cache.Create(ctx, fresh.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	groups, err := x.Groups(ctx, "tenant", "bundle")
	if err != nil || len(groups) != 1 {
		t.Fatalf("once cached the group is listed once, got %d (%v)", len(groups), err)
	}

	x.Admitted(group("phantom", "u2", "bundle", "operand-b"))
	now = now.Add(admittedTTL + time.Second)
	if cg, _ := x.FindHolding(ctx, "tenant", "operand-b", "bundle"); cg != nil {
		t.Fatalf("a group never stored is forgotten after the TTL, got %s", cg.Name)
	}

	// With a live reader, an admitted group that is gone (deleted before the cache
	// saw it) holds nothing at once, and one re-created under the same name with
	// another UID is not mistaken for it.
	x.Live = cache
	x.Admitted(group("deleted-at-once", "u3", "bundle", "operand-c"))
	if cg, err := x.FindHolding(ctx, "tenant", "operand-c", "bundle"); err != nil || cg != nil {
		t.Fatalf("a group deleted at once holds nothing: %v %v", cg, err)
	}
	if len(x.admitted) != 0 {
		t.Fatalf("and is forgotten: %v", x.admitted)
	}
}
