package alerts_test

import "time"

// The cases of the nudgeflow.scrape and nudgeflow.certificates groups (monitoring
// that notices it is blind; cert-manager's Certificates), kept beside the others'
// in cases.
func init() { cases = append(cases, monitoringCases...) }

const (
	receiverJob = `job="nudgeflow-receiver-metrics", namespace="nudgeflow-system", instance="10.0.0.9:8080"`
	// cert-manager's controller metrics as a ServiceMonitor stores them: the
	// Certificate's namespace renamed exported_namespace.
	certManager = `job="cert-manager", namespace="cert-manager", exported_namespace="nudgeflow-system", issuer_kind="Issuer", issuer_group="cert-manager.io"`
)

var monitoringCases = []alertCase{
	{alert: "NudgeflowMetricsAbsent", name: "the receiver's ServiceMonitor was refused: no receiver target at all",
		series: `
			up{` + bridgeJob + `} 1x30
			up{` + workerJob + `} 1x30`,
		at:     15 * time.Minute,
		firing: []map[string]string{{"job": "nudgeflow-receiver-metrics"}}},
	{alert: "NudgeflowMetricsAbsent", name: "every bridge scrape fails (the CA is not trusted): discovered, never up",
		series: `
			up{` + bridgeJob + `} 0x30
			up{job="nudgeflow-bridge-metrics", namespace="nudgeflow-system", instance="10.0.0.17:8080"} 0x30
			up{` + workerJob + `} 1x30
			up{` + receiverJob + `} 1x30`,
		at:     12 * time.Minute,
		firing: []map[string]string{{"job": "nudgeflow-bridge-metrics"}}},
	{alert: "NudgeflowMetricsAbsent", name: "nothing of nudgeflow is scraped (Prometheus may not discover the namespace)",
		series: `
			up{job="kube-state-metrics", namespace="monitoring", instance="10.0.0.2:8443"} 1x30`,
		at: 11 * time.Minute,
		firing: []map[string]string{{"job": "nudgeflow-bridge-metrics"}, {"job": "nudgeflow-worker-metrics"},
			{"job": "nudgeflow-receiver-metrics"}}},
	{alert: "NudgeflowMetricsAbsent", name: "every process scraped; one bridge replica failing is NudgeflowScrapeFailing's",
		series: `
			up{` + bridgeJob + `} 1x30
			up{job="nudgeflow-bridge-metrics", namespace="nudgeflow-system", instance="10.0.0.17:8080"} 0x30
			up{` + workerJob + `} 1x30
			up{` + receiverJob + `} 1x30`,
		at: 20 * time.Minute},
	{alert: "NudgeflowMetricsAbsent", name: "a rollout: the worker's targets replaced within 5 minutes",
		series: `
			up{` + bridgeJob + `} 1x30
			up{` + workerJob + `} 1x5 _x25
			up{job="nudgeflow-worker-metrics", namespace="nudgeflow-system", instance="10.0.0.18:8443"} _x8 1x22
			up{` + receiverJob + `} 1x30`,
		at: 20 * time.Minute},

	{alert: "NudgeflowScrapeFailing", name: "one worker replica's scrape refused for 20 minutes",
		series: `
			up{` + workerJob + `} 0x30
			up{job="nudgeflow-worker-metrics", namespace="nudgeflow-system", instance="10.0.0.18:8443"} 1x30`,
		at:     20 * time.Minute,
		firing: []map[string]string{{"job": "nudgeflow-worker-metrics", "namespace": "nudgeflow-system", "instance": "10.0.0.8:8081"}}},
	{alert: "NudgeflowScrapeFailing", name: "a 10-minute failure that recovers; another job down",
		series: `
			up{` + receiverJob + `} 0x10 1x20
			up{job="someone-else", namespace="other", instance="10.0.0.30:8080"} 0x30`,
		at: 20 * time.Minute},

	{alert: "NudgeflowCertificateNotReady", name: "the webhook certificate cannot be renewed (the CA Issuer is not ready)",
		series: `
			certmanager_certificate_ready_status{` + certManager + `, name="nudgeflow-bridge-webhook", issuer_name="nudgeflow-ca", condition="True"} 1x5 0x30
			certmanager_certificate_ready_status{` + certManager + `, name="nudgeflow-bridge-webhook", issuer_name="nudgeflow-ca", condition="False"} 0x5 1x30
			certmanager_certificate_ready_status{` + certManager + `, name="nudgeflow-bridge-webhook", issuer_name="nudgeflow-ca", condition="Unknown"} 0x35`,
		at:     25 * time.Minute,
		firing: []map[string]string{{"name": "nudgeflow-bridge-webhook"}}},
	{alert: "NudgeflowCertificateNotReady", name: "every nudgeflow Certificate Ready; first issuance took 5 minutes; another product's not Ready",
		series: `
			certmanager_certificate_ready_status{` + certManager + `, name="nudgeflow-ca", issuer_name="nudgeflow-selfsigned", condition="True"} 1x35
			certmanager_certificate_ready_status{` + certManager + `, name="nudgeflow-ca", issuer_name="nudgeflow-selfsigned", condition="False"} 0x35
			certmanager_certificate_ready_status{` + certManager + `, name="nudgeflow-worker-metrics", issuer_name="nudgeflow-ca", condition="Unknown"} 1x5 0x30
			certmanager_certificate_ready_status{` + certManager + `, name="nudgeflow-worker-metrics", issuer_name="nudgeflow-ca", condition="True"} 0x5 1x30
			certmanager_certificate_ready_status{` + certManager + `, name="other-app", issuer_name="other", condition="False"} 1x35`,
		at: 30 * time.Minute},

	// The evaluation clock starts at the Unix epoch: an expiry of 864000 is 10 days
	// away, 2592000 thirty.
	{alert: "NudgeflowCertificateExpiresSoon", name: "the receiver's certificate expires in 10 days, not renewed",
		series: `
			certmanager_certificate_expiration_timestamp_seconds{` + certManager + `, name="nudgeflow-receiver", issuer_name="nudgeflow-ca"} 864000x90
			certmanager_certificate_expiration_timestamp_seconds{` + certManager + `, name="nudgeflow-ca", issuer_name="nudgeflow-selfsigned"} 315360000x90`,
		at:     70 * time.Minute,
		firing: []map[string]string{{"name": "nudgeflow-receiver"}}},
	{alert: "NudgeflowCertificateExpiresSoon", name: "30 days left (renewal is due, not late); a Certificate never issued (0); another product's expiring",
		series: `
			certmanager_certificate_expiration_timestamp_seconds{` + certManager + `, name="nudgeflow-bridge-webhook", issuer_name="nudgeflow-ca"} 2592000x90
			certmanager_certificate_expiration_timestamp_seconds{` + certManager + `, name="nudgeflow-worker-metrics", issuer_name="nudgeflow-ca"} 0x90
			certmanager_certificate_expiration_timestamp_seconds{` + certManager + `, name="other-app", issuer_name="other"} 3600x90`,
		at: 80 * time.Minute},
	{alert: "NudgeflowCertificateExpiresSoon", name: "renewed after 30 minutes of a near expiry",
		series: `
			certmanager_certificate_expiration_timestamp_seconds{` + certManager + `, name="nudgeflow-bridge-webhook", issuer_name="nudgeflow-ca"} 864000x30 7776000x60`,
		at: 80 * time.Minute},
}
