package changegroupcontroller

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// AdmissionMetric is the histogram of the time the ChangeGroup webhooks spend on one
// admission request once it is decoded: label webhook is "intercept" (nudge
// PipelineRuns) or "changegroup" (the validator), operation the request's
// (CREATE, UPDATE, DELETE). It is served with controller-runtime's metrics (the
// manager's metrics endpoint) and read by `nudgeflow-dev bench`. Besides the classic
// buckets it keeps a native histogram with about 5% wide buckets, fine enough for a
// p99 of a fraction of a millisecond.
const AdmissionMetric = "nudgeflow_admission_duration_seconds"

// Webhook label values of AdmissionMetric.
const (
	WebhookIntercept   = "intercept"
	WebhookChangeGroup = "changegroup"
)

var admissionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:                            AdmissionMetric,
	Help:                            "Time the ChangeGroup admission webhooks spend on one request (nudge PipelineRun interception, ChangeGroup validation).",
	Buckets:                         []float64{.0001, .00025, .0005, .001, .002, .005, .01, .025, .05, .1, .25, 1},
	NativeHistogramBucketFactor:     1.05,
	NativeHistogramMaxBucketNumber:  300,
	NativeHistogramMinResetDuration: time.Hour,
}, []string{"webhook", "operation"})

func init() { metrics.Registry.MustRegister(admissionSeconds) }

func observe(webhook string, op admissionv1.Operation, began time.Time) {
	admissionSeconds.WithLabelValues(webhook, string(op)).Observe(time.Since(began).Seconds())
}

// timedHandler records each request of an admission handler.
type timedHandler struct {
	webhook string
	next    admission.Handler
}

func (h timedHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	defer observe(h.webhook, req.Operation, time.Now())
	return h.next.Handle(ctx, req)
}

// timedValidator records each validation of a custom validator.
type timedValidator struct {
	webhook string
	next    admission.CustomValidator
}

func (v timedValidator) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	defer observe(v.webhook, admissionv1.Create, time.Now())
	return v.next.ValidateCreate(ctx, obj)
}

func (v timedValidator) ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	defer observe(v.webhook, admissionv1.Update, time.Now())
	return v.next.ValidateUpdate(ctx, oldObj, newObj)
}

func (v timedValidator) ValidateDelete(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	defer observe(v.webhook, admissionv1.Delete, time.Now())
	return v.next.ValidateDelete(ctx, obj)
}
