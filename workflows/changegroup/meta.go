package changegroup

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type metav1Condition = metav1.Condition

// timePtr converts workflow time to the CR's optional timestamps (zero → unset).
func timePtr(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t.UTC().Truncate(time.Second))
	return &mt
}
