// Package releases finds where a component's images are released to: the
// distribution repositories of the ReleasePlanAdmissions that admit its
// namespace, as build-service reads them (reference/konflux-nudging.md §1 item 9).
// An OLM bundle references its operands by these repositories, so every place that
// writes a digest rewrites them as well as the repository the build pushed to.
package releases

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	mirrorv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/appstudio/v1alpha1"
)

// Problem is an admission whose data could not be read; the lookup goes on with
// the others and the caller reports it.
type Problem struct {
	Admission string
	Err       error
}

func (p Problem) Error() string {
	return fmt.Sprintf("ReleasePlanAdmission %s: %v", p.Admission, p.Err)
}

// Repositories returns, for each component of namespace named in components, its
// distribution repositories in the order the admissions list them (duplicates
// removed), including the registry.redhat.io / registry.stage.redhat.io names of
// quay.io/redhat-prod and quay.io/redhat-pending repositories. ReleasePlanAdmissions
// live in managed namespaces, so this lists them cluster-wide: r should be a cache.
func Repositories(ctx context.Context, r ctrlclient.Reader, namespace string, components ...string) (map[string][]string, []Problem, error) {
	var list mirrorv1alpha1.ReleasePlanAdmissionList
	err := r.List(ctx, &list)
	if meta.IsNoMatchError(err) || runtime.IsNotRegisteredError(err) {
		// A cluster without release-service releases nothing: only the built
		// repository is referenced.
		return map[string][]string{}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("listing ReleasePlanAdmissions: %w", err)
	}
	out, problems := FromAdmissions(list.Items, namespace, components...)
	return out, problems, nil
}

// FromAdmissions is Repositories on admissions already read.
func FromAdmissions(admissions []mirrorv1alpha1.ReleasePlanAdmission, namespace string, components ...string) (map[string][]string, []Problem) {
	want := map[string]bool{}
	for _, c := range components {
		want[c] = true
	}
	out := map[string][]string{}
	var problems []Problem
	// Sorted by namespace/name: the same admissions give the same order every time.
	slices.SortFunc(admissions, func(a, b mirrorv1alpha1.ReleasePlanAdmission) int {
		if a.Namespace != b.Namespace {
			return compare(a.Namespace, b.Namespace)
		}
		return compare(a.Name, b.Name)
	})
	for _, rpa := range admissions {
		if rpa.Spec.Origin != namespace || rpa.Spec.Data == nil || len(rpa.Spec.Data.Raw) == 0 {
			continue
		}
		var data struct {
			Mapping struct {
				Components []struct {
					Name         string `json:"name"`
					Repositories []struct {
						URL string `json:"url"`
					} `json:"repositories"`
				} `json:"components"`
			} `json:"mapping"`
		}
		if err := json.Unmarshal(rpa.Spec.Data.Raw, &data); err != nil {
			problems = append(problems, Problem{Admission: rpa.Namespace + "/" + rpa.Name, Err: err})
			// A field of the wrong type is skipped and the rest decodes (Go's
			// json.Unmarshal goes on after an UnmarshalTypeError): build-service uses
			// what decoded, so do we. Unreadable JSON decodes nothing.
			var typeErr *json.UnmarshalTypeError
			if !errors.As(err, &typeErr) {
				continue
			}
		}
		for _, c := range data.Mapping.Components {
			if !want[c.Name] {
				continue
			}
			for _, repo := range c.Repositories {
				if repo.URL == "" {
					continue
				}
				for _, u := range []string{repo.URL, PublicName(repo.URL)} {
					if u != "" && !slices.Contains(out[c.Name], u) {
						out[c.Name] = append(out[c.Name], u)
					}
				}
			}
		}
	}
	return out, problems
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

var (
	prodRepo  = regexp.MustCompile(`^quay\.io/redhat-prod/(.*)----(.*)$`)
	stageRepo = regexp.MustCompile(`^quay\.io/redhat-pending/(.*)----(.*)$`)
)

// PublicName maps quay.io/redhat-prod/a----b to registry.redhat.io/a/b and
// quay.io/redhat-pending/a----b to registry.stage.redhat.io/a/b (build-service's
// mapToRegistryRedhatIo, KFLUXBUGS-1233); other repositories have none ("").
func PublicName(repo string) string {
	if m := prodRepo.FindStringSubmatch(repo); m != nil {
		return "registry.redhat.io/" + m[1] + "/" + m[2]
	}
	if m := stageRepo.FindStringSubmatch(repo); m != nil {
		return "registry.stage.redhat.io/" + m[1] + "/" + m[2]
	}
	return ""
}
