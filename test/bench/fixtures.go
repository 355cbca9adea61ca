package bench

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appstudiov1alpha1 "github.com/nudgeflow/nudgeflow/api/appstudio/v1alpha1"
	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
	"github.com/nudgeflow/nudgeflow/internal/forge"
)

// A tenant namespace of the bench: bundles (the nudged components, each with a
// repository in the GitHub emulator whose CSV references the operands) and operands
// (the nudging components, with a last promoted image). Group g of a namespace
// nudges bundle-(g / groupsPerBundle) and collects three operands:
// op-(3j), op-(3j+1), op-(3j+2) with j = g % groupsPerBundle, so the groups of one
// bundle never overlap and every bundle's groups cover op-0 … op-(3·perBundle-1).
// The freeOperands after those belong to no group.
const (
	membersPerGroup = 3
	freeOperands    = 10
	imageRegistry   = "quay.io/nudgeflow-bench/"
	createWorkers   = 16
)

func operand(i int) string  { return fmt.Sprintf("op-%d", i) }
func bundleOf(b int) string { return fmt.Sprintf("bundle-%d", b) }

func digestOf(parts ...any) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(fmt.Sprint(parts...))))
}

// bundlesFor is how many bundles hold groups groups.
func (s *stack) bundlesFor(groups int) int {
	return (groups + s.opts.GroupsPerBundle - 1) / s.opts.GroupsPerBundle
}

func (s *stack) operands() int { return membersPerGroup*s.opts.GroupsPerBundle + freeOperands }

// seedNamespace creates a namespace with forge credentials, the operands and
// bundles Components and the bundles' repositories.
func (s *stack) seedNamespace(ctx context.Context, ns string, bundles int) error {
	if s.seeded[ns] {
		return nil
	}
	if err := s.kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	if err := s.kube.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: credentialsNS, Namespace: ns, Labels: map[string]string{
			forge.LabelCredentials: "scm", forge.LabelSCMHost: strings.Split(s.emu.Host(), ":")[0]}},
		Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{corev1.BasicAuthUsernameKey: []byte("nudgeflow"), corev1.BasicAuthPasswordKey: []byte(forgeToken)},
	}); err != nil {
		return fmt.Errorf("creating forge credentials in %s: %w", ns, err)
	}
	ops := s.operands()
	var csv strings.Builder
	csv.WriteString("kind: ClusterServiceVersion\nspec:\n  relatedImages:\n")
	for i := 0; i < ops; i++ {
		fmt.Fprintf(&csv, "  - name: %s\n    image: %s%s@%s\n", operand(i), imageRegistry, operand(i), digestOf(ns, operand(i), 0))
	}
	err := parallel(ctx, ops+bundles, createWorkers, func(ctx context.Context, i int) error {
		if i < ops {
			name := operand(i)
			c := &mirrorv1alpha1.Component{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: mirrorv1alpha1.ComponentSpec{ComponentName: name, ContainerImage: imageRegistry + name,
					Source: mirrorv1alpha1.ComponentSource{GitSource: &mirrorv1alpha1.GitSource{URL: "https://github.com/org/" + name}}},
			}
			if err := s.kube.Create(ctx, c); err != nil {
				return fmt.Errorf("creating component %s/%s: %w", ns, name, err)
			}
			c.Status.LastPromotedImage = imageRegistry + name + "@" + digestOf(ns, name, 0)
			return s.kube.Status().Update(ctx, c)
		}
		name := bundleOf(i - ops)
		s.emu.CreateRepo(ns, name, "main", map[string]string{"bundle/manifests/operator.clusterserviceversion.yaml": csv.String()})
		return s.kube.Create(ctx, &mirrorv1alpha1.Component{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: mirrorv1alpha1.ComponentSpec{ComponentName: name, ContainerImage: imageRegistry + name,
				Source: mirrorv1alpha1.ComponentSource{GitSource: &mirrorv1alpha1.GitSource{URL: s.emu.URL() + "/" + ns + "/" + name, Revision: "main"}}},
		})
	})
	if err != nil {
		return fmt.Errorf("seeding %s: %w", ns, err)
	}
	s.seeded[ns] = true
	return nil
}

// group is the g-th ChangeGroup of a namespace (see the layout above).
func (s *stack) group(ns string, g int) *appstudiov1alpha1.ChangeGroup {
	j := g % s.opts.GroupsPerBundle
	cg := &appstudiov1alpha1.ChangeGroup{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("group-%d", g), Namespace: ns},
		Spec:       appstudiov1alpha1.ChangeGroupSpec{NudgedComponent: bundleOf(g / s.opts.GroupsPerBundle)},
	}
	for m := 0; m < membersPerGroup; m++ {
		cg.Spec.NudgingComponents = append(cg.Spec.NudgingComponents, appstudiov1alpha1.NudgingComponentRef{Name: operand(membersPerGroup*j + m)})
	}
	return cg
}

// createGroups creates groups 0..n-1 of a namespace, concurrently.
func (s *stack) createGroups(ctx context.Context, ns string, n int) error {
	return parallel(ctx, n, createWorkers, func(ctx context.Context, g int) error {
		if err := s.kube.Create(ctx, s.group(ns, g)); err != nil {
			return fmt.Errorf("creating ChangeGroup %s/group-%d: %w", ns, g, err)
		}
		return nil
	})
}

// waitGroupsIdle waits until want ChangeGroups of ns have their workflow's first
// status (phase Initialized: resolved, written, waiting for builds), then until the
// worker has nothing left to do.
func (s *stack) waitGroupsIdle(ctx context.Context, ns string, want int) error {
	timeout := 5*time.Minute + time.Duration(want)*100*time.Millisecond
	last := time.Now()
	err := waitFor(ctx, timeout, fmt.Sprintf("%d ChangeGroups of %s are initialized", want, ns), func() (bool, error) {
		if err := s.worker.exited(); err != nil {
			return false, &fatalError{err}
		}
		var list appstudiov1alpha1.ChangeGroupList
		if err := s.mgr.GetCache().List(ctx, &list, ctrlclient.InNamespace(ns), ctrlclient.UnsafeDisableDeepCopy); err != nil {
			return false, err
		}
		initialized := 0
		for i := range list.Items {
			cg := &list.Items[i]
			if cg.Status.Phase.IsFinal() {
				return false, &fatalError{fmt.Errorf("ChangeGroup %s/%s ended: %s %+v", ns, cg.Name, cg.Status.Phase, cg.Status.Conditions)}
			}
			if cg.Status.Phase != "" {
				initialized++
			}
		}
		if time.Since(last) > 15*time.Second {
			s.progress("%d of %d ChangeGroups of %s initialized", initialized, want, ns)
			last = time.Now()
		}
		return initialized >= want, nil
	})
	if err != nil {
		return err
	}
	return s.settle(ctx)
}

// settle waits until the worker's task queue has no backlog, twice in a row.
func (s *stack) settle(ctx context.Context) error {
	zeros := 0
	return waitFor(ctx, 10*time.Minute, "the worker's task queue is drained", func() (bool, error) {
		if err := s.worker.exited(); err != nil {
			return false, &fatalError{err}
		}
		n, err := backlog(ctx, s.tc, s.tmp.Namespace, taskQueue)
		if err != nil {
			return false, err
		}
		if n > 0 {
			zeros = 0
			return false, fmt.Errorf("%d tasks in the backlog", n)
		}
		zeros++
		return zeros >= 2, nil
	})
}
