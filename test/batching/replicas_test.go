// Package batching_test runs two bridge replicas opening the automatic ChangeGroup of
// one target at once on a real API server.
package batching_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/autogroups"
	"github.com/nudgeflow/nudgeflow/internal/grouplookup"
	"github.com/nudgeflow/nudgeflow/internal/kube"
	"github.com/nudgeflow/nudgeflow/test/localenv"
)

// barrierReader lets a replica's first look at the groups finish only once the
// other replica has looked too: both see "no batch yet" before either creates,
// the race two bridge replicas run, replayed exactly.
type barrierReader struct {
	ctrlclient.Reader
	first   sync.Once
	barrier *sync.WaitGroup
}

func (b *barrierReader) List(ctx context.Context, list ctrlclient.ObjectList, opts ...ctrlclient.ListOption) error {
	err := b.Reader.List(ctx, list, opts...)
	b.first.Do(func() { b.barrier.Done(); b.barrier.Wait() })
	return err
}

// TestTwoReplicasOpenOneBatch: two bridge replicas (two Openers, each with its
// own client and locks, no shared memory) open the automatic group of one target
// at the same moment on a real API server. One batch is opened and both builds go
// to it: the admission of automatic groups does not rest on one process's memory.
func TestTwoReplicasOpenOneBatch(t *testing.T) {
	cp, err := localenv.StartControlPlane(localenv.ControlPlaneOptions{})
	if err != nil {
		t.Fatalf("a real API server is needed (KUBEBUILDER_ASSETS=$(hack/tools.sh assets)): %v", err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	ctx := context.Background()
	newClient := func() ctrlclient.Client {
		c, err := ctrlclient.New(cp.Config, ctrlclient.Options{Scheme: kube.NewScheme()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	admin := newClient()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}); err != nil {
		t.Fatal(err)
	}
	nc := &konfluxv1alpha1.NudgeConfig{ObjectMeta: metav1.ObjectMeta{Name: konfluxv1alpha1.NudgeConfigName, Namespace: "ns", UID: "nc-uid"}}
	for _, n := range []string{"a", "b"} {
		nc.Spec.Nudges = append(nc.Spec.Nudges, konfluxv1alpha1.NudgeRelationship{From: n, To: "bundle"})
	}
	nc.Spec.Batching = []konfluxv1alpha1.BatchingPolicy{{Target: "bundle", Window: &metav1.Duration{Duration: time.Minute}}}

	var barrier sync.WaitGroup
	barrier.Add(2)
	replica := func() *autogroups.Opener {
		c := newClient()
		return &autogroups.Opener{Kube: c, Live: &barrierReader{Reader: c, barrier: &barrier}}
	}
	r1, r2 := replica(), replica()
	got := make([]string, 2)
	var wg sync.WaitGroup
	for i, run := range []struct {
		o      *autogroups.Opener
		source string
	}{{r1, "a"}, {r2, "b"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cg, err := run.o.Holder(ctx, nc, run.source, "bundle")
			if err != nil || cg == nil {
				t.Errorf("%s: %v %v", run.source, cg, err)
				return
			}
			got[i] = cg.Name
		}()
	}
	wg.Wait()
	var list appstudiov1alpha1.ChangeGroupList
	if err := admin.List(ctx, &list, ctrlclient.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	var batches []string
	for _, cg := range list.Items {
		if grouplookup.IsAutomatic(&cg) {
			batches = append(batches, cg.Name)
		}
	}
	if len(batches) != 1 {
		t.Fatalf("two replicas opened %d automatic groups for one target, want 1: %v", len(batches), batches)
	}
	if got[0] != batches[0] || got[1] != batches[0] {
		t.Fatalf("both builds go to the one batch %s: %v", batches[0], got)
	}
}
