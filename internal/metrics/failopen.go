package metrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// AdmissionFailOpen counts the admission requests a bridge webhook allowed because
// of its own error: a read of the cache or the API server failed, or the answer
// could not be built, and the webhook let the PipelineRun go as if nudgeflow were
// not installed (both PipelineRun hooks fail open by design: a nudgeflow fault must
// never block Konflux builds). The API server's
// apiserver_admission_webhook_fail_open_count sees only the calls it could not make;
// these it made, and got an "allowed" that means "could not tell".
//
// Labels webhook and reason are bounded (FailOpenReasons): every pair is exported
// at 0 from the start, so the first fail-open of a process is an increase Prometheus
// sees, not the birth of a series.
const AdmissionFailOpen = "nudgeflow_admission_fail_open_total"

// Webhook label values of AdmissionFailOpen: the webhooks' names in deploy/webhooks
// without the domain (their new-keys twins count under the same value).
const (
	WebhookNudgePipelineRun = "nudge-pipelinerun"
	WebhookBuildRouting     = "build-routing"
)

// Reason label values of AdmissionFailOpen.
const (
	// FailOpenChangeGroupsUnread: the interceptor could not tell which ChangeGroup
	// holds the nudge; it ran, held by none.
	FailOpenChangeGroupsUnread = "changegroups-unread"
	// FailOpenBatchingUnread: the NudgeConfig's batching could not be read; the
	// nudge's targets ran unbatched.
	FailOpenBatchingUnread = "batching-unread"
	// FailOpenGatingUnread: the NudgeConfig's validated edges could not be read; the
	// nudge's targets ran without waiting for tests.
	FailOpenGatingUnread = "gating-unread"
	// FailOpenBuildUnread: the nudging build could not be read; it was not checked
	// for a merge-queue build.
	FailOpenBuildUnread = "build-unread"
	// FailOpenEdgesUnread: the hook could not read the component's nudge edges; the
	// build was created without the build-routing finalizer.
	FailOpenEdgesUnread = "edges-unread"
	// FailOpenUndecodable: the hook could not decode the PipelineRun it was sent.
	FailOpenUndecodable = "undecodable"
	// FailOpenPatchFailed: the hook could not build its patch.
	FailOpenPatchFailed = "patch-failed"
	// FailOpenOther stands for a pair missing from FailOpenReasons (a call site
	// added without its reason): counted, never a new series.
	FailOpenOther = "other"
)

// FailOpenReasons lists the reasons each webhook fails open for.
var FailOpenReasons = map[string][]string{
	WebhookNudgePipelineRun: {FailOpenChangeGroupsUnread, FailOpenBatchingUnread, FailOpenGatingUnread, FailOpenBuildUnread, FailOpenOther},
	WebhookBuildRouting:     {FailOpenEdgesUnread, FailOpenUndecodable, FailOpenPatchFailed, FailOpenOther},
}

var admissionFailOpen = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: AdmissionFailOpen,
	Help: "Admission requests a nudgeflow PipelineRun webhook allowed because of its own error (a failed read or patch), by webhook and reason.",
}, []string{"webhook", "reason"})

func init() {
	Registry.MustRegister(admissionFailOpen)
	for webhook, reasons := range FailOpenReasons {
		for _, reason := range reasons {
			admissionFailOpen.WithLabelValues(webhook, reason)
		}
	}
}

// CountFailOpen counts one request webhook allowed on its own error. A webhook or
// reason outside FailOpenReasons counts as FailOpenOther of the webhook (of
// nudge-pipelinerun for an unknown webhook): the labels stay bounded.
func CountFailOpen(webhook, reason string) {
	reasons, ok := FailOpenReasons[webhook]
	if !ok {
		webhook, reasons = WebhookNudgePipelineRun, nil
	}
	if !slices.Contains(reasons, reason) {
		reason = FailOpenOther
	}
	admissionFailOpen.WithLabelValues(webhook, reason).Inc()
}
