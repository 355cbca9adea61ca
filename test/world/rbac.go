package world

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// AggregateClusterRoles does what kube-controller-manager's clusterrole-aggregation
// controller does on a cluster (envtest runs no controller manager): the rules of
// each ClusterRole with an aggregationRule become the rules of the ClusterRoles its
// selectors match, in name order, each rule once; repeated until nothing changes,
// since admin aggregates edit, which aggregates view.
func AggregateClusterRoles(ctx context.Context, k ctrlclient.Client) error {
	for pass := 0; pass < 10; pass++ {
		var roles rbacv1.ClusterRoleList
		if err := k.List(ctx, &roles); err != nil {
			return fmt.Errorf("listing ClusterRoles: %w", err)
		}
		slices.SortFunc(roles.Items, func(a, b rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
		changed := false
		for i := range roles.Items {
			agg := &roles.Items[i]
			if agg.AggregationRule == nil {
				continue
			}
			var rules []rbacv1.PolicyRule
			for _, sel := range agg.AggregationRule.ClusterRoleSelectors {
				s, err := metav1.LabelSelectorAsSelector(&sel)
				if err != nil {
					return fmt.Errorf("ClusterRole %s: %w", agg.Name, err)
				}
				for _, r := range roles.Items {
					if r.Name == agg.Name || !s.Matches(labels.Set(r.Labels)) {
						continue
					}
					for _, rule := range r.Rules {
						if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, rule) }) {
							rules = append(rules, rule)
						}
					}
				}
			}
			if equality.Semantic.DeepEqual(rules, agg.Rules) {
				continue
			}
			agg.Rules = rules
			if err := k.Update(ctx, agg); err != nil {
				return fmt.Errorf("aggregating ClusterRole %s: %w", agg.Name, err)
			}
			changed = true
		}
		if !changed {
			return nil
		}
	}
	return errors.New("ClusterRole aggregation did not converge in 10 passes")
}
