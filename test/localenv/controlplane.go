package localenv

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControlPlaneOptions configures a local kube-apiserver + etcd.
type ControlPlaneOptions struct {
	// Log receives the output of both processes.
	Log io.Writer
	// EtcdDataDir keeps etcd's data across restarts; a temporary folder when empty.
	EtcdDataDir string
	// WebhookManifests are folders or files with webhook configurations to install;
	// envtest serves them from a local address with its own certificates.
	WebhookManifests []string
	// ExtraCRDDirs are loaded beside deploy/crds and test/crds.
	ExtraCRDDirs []string
	// WithoutShippedNudgeConfig leaves out integration-service's NudgeConfig CRD
	// (test/crds), as on a cluster without integration-service: `kubectl get nc`
	// then names nudgeflow's own kind (the dev stack).
	WithoutShippedNudgeConfig bool
	// APIServerPort is kube-apiserver's secure port on 127.0.0.1; a free one when zero.
	APIServerPort int
	// DieWithParentDir, when set, makes kube-apiserver and etcd die with this
	// process on Linux: they start through parent-death shims written there (see
	// HandleParentDeathExec, which the running binary's main must call). Call
	// StartControlPlane inside OnLongLivedThread then.
	DieWithParentDir string
	// EtcdQuotaBytes raises etcd's backend quota (--quota-backend-bytes) above its
	// 2 GiB default, which a cluster's worth of PipelineRuns outgrows (etcd then
	// refuses every write with "mvcc: database space exceeded"); zero keeps it.
	EtcdQuotaBytes int64
	// NoEtcdCompaction stops kube-apiserver compacting etcd
	// (--etcd-compaction-interval=0; every 5 minutes by default). A paged list
	// served from etcd must end before the next compaction, or its continue token
	// expires and client-go's pager falls back to one unpaged list: for 100,000
	// PipelineRuns a 3 GB etcd response, over gRPC's 2 GB limit, and the informer
	// starts again. Served from etcd on 2 cores, listing 100,000 runs takes longer.
	NoEtcdCompaction bool
	// RequestTimeout raises kube-apiserver's --request-timeout (1 minute by
	// default). Without a watch cache, one page of a list by a label few objects
	// carry (500 nudge runs among 100,000) makes the API server read up to 10,000
	// objects from etcd, which on 2 busy cores takes longer than a minute: the
	// request is cut and the informer lists again from the start.
	RequestTimeout time.Duration
	// WithoutWatchCache lists resources ("pipelineruns.tekton.dev") kube-apiserver
	// keeps no watch cache for (--watch-cache-sizes=<resource>#0): it then serves
	// their lists from etcd (paged when asked) and their watches from etcd watches.
	// The watch cache holds every object decoded (a custom resource as unstructured
	// maps: about 0.5 MB per 29 KB PipelineRun), which a measure writing 100,000
	// of them cannot afford; a test world keeps it, as a cluster does.
	WithoutWatchCache []string
}

// ControlPlane is a running kube-apiserver + etcd with every CRD installed.
type ControlPlane struct {
	Env    *envtest.Environment
	Config *rest.Config
}

// OpenShiftAdmissionPlugins are the upstream kube-apiserver admission plugins
// OpenShift turns on that upstream leaves off (openshift/kubernetes,
// package openshift-kube-apiserver/admission/admissionenablement,
// additionalDefaultOnPlugins), so the test world refuses what an OpenShift
// cluster refuses:
//   - OwnerReferencesPermissionEnforcement: blockOwnerDeletion on an owner
//     reference needs update on the owner's finalizers subresource, and changing
//     an object's owner references needs delete on it. This is the one nudgeflow's
//     writes meet (the Renovate run's ConfigMaps and Secret are owned by it).
//   - PodNodeSelector, PodTolerationRestriction: read namespace annotations on pod
//     writes; nudgeflow writes no pods, but they cost nothing and keep the set whole.
//   - NodeRestriction: limits what kubelets (system:node:*) may change; no test acts
//     as a node, so it never refuses, but it is part of the set.
//
// The rest of OpenShift's list is already on in upstream v1.34 (Priority,
// StorageObjectInUseProtection, ResourceQuota, LimitRanger, the webhooks and
// ValidatingAdmissionPolicy) or is OpenShift's own (SCCs, ImagePolicy,
// ClusterResourceQuota, ...), which upstream kube-apiserver does not have.
// PersistentVolumeLabel, on in older OpenShift releases, is gone from upstream.
// ServiceAccount stays off, as envtest leaves it: it would refuse every pod whose
// ServiceAccount no controller created (no controller-manager runs here), and
// nudgeflow writes no pods.
var OpenShiftAdmissionPlugins = []string{
	"OwnerReferencesPermissionEnforcement",
	"PodNodeSelector",
	"PodTolerationRestriction",
	"NodeRestriction",
}

// CRDDirs are nudgeflow's own CRDs and the test CRDs of the Konflux and Tekton kinds it reads.
func CRDDirs() []string {
	root := RepoRoot()
	return []string{filepath.Join(root, "deploy", "crds"), filepath.Join(root, "test", "crds")}
}

// shippedNudgeConfigCRD is integration-service's NudgeConfig CRD among test/crds.
const shippedNudgeConfigCRD = "appstudio.redhat.com_nudgeconfigs.yaml"

// crdPaths are CRDDirs, or their files but integration-service's NudgeConfig.
func crdPaths(withoutShippedNudgeConfig bool) []string {
	if !withoutShippedNudgeConfig {
		return CRDDirs()
	}
	var paths []string
	for _, dir := range CRDDirs() {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, f := range files {
			if filepath.Base(f) != shippedNudgeConfigCRD && filepath.Base(f) != "kustomization.yaml" {
				paths = append(paths, f)
			}
		}
	}
	return paths
}

// StartControlPlane starts the control plane and installs the CRDs (waiting until
// they are served).
func StartControlPlane(opts ControlPlaneOptions) (*ControlPlane, error) {
	assets, err := KubeAssets()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     append(crdPaths(opts.WithoutShippedNudgeConfig), opts.ExtraCRDDirs...),
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: opts.WebhookManifests},
	}
	apiServer := env.ControlPlane.GetAPIServer()
	apiServer.Out, apiServer.Err = opts.Log, opts.Log
	apiServer.Configure().Append("enable-admission-plugins", OpenShiftAdmissionPlugins...)
	for _, resource := range opts.WithoutWatchCache {
		apiServer.Configure().Append("watch-cache-sizes", resource+"#0")
	}
	if opts.NoEtcdCompaction {
		apiServer.Configure().Set("etcd-compaction-interval", "0")
	}
	if opts.RequestTimeout > 0 {
		apiServer.Configure().Set("request-timeout", opts.RequestTimeout.String())
	}
	if opts.APIServerPort != 0 {
		apiServer.SecureServing.Address = "127.0.0.1"
		apiServer.SecureServing.Port = strconv.Itoa(opts.APIServerPort)
	}
	env.ControlPlane.Etcd = &envtest.Etcd{Out: opts.Log, Err: opts.Log, DataDir: opts.EtcdDataDir}
	if opts.EtcdQuotaBytes > 0 {
		env.ControlPlane.Etcd.Configure().Set("quota-backend-bytes", strconv.FormatInt(opts.EtcdQuotaBytes, 10))
	}
	if opts.DieWithParentDir != "" {
		// envtest sets its own process attributes (a process group, no parent-death
		// signal) but takes the binaries' paths: give it the shims.
		if apiServer.Path, err = parentDeathShim(opts.DieWithParentDir, filepath.Join(assets, "kube-apiserver")); err != nil {
			return nil, err
		}
		if env.ControlPlane.Etcd.Path, err = parentDeathShim(opts.DieWithParentDir, filepath.Join(assets, "etcd")); err != nil {
			return nil, err
		}
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	return &ControlPlane{Env: env, Config: cfg}, nil
}

// TempDirs are the folders envtest made for this control plane outside the state
// (kube-apiserver's certificates, the webhooks' serving certificates); Stop
// removes them, a crash leaves them behind.
func (c *ControlPlane) TempDirs() []string {
	var dirs []string
	for _, d := range []string{c.Env.ControlPlane.GetAPIServer().CertDir, c.Env.WebhookInstallOptions.LocalServingCertDir} {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// Stop stops both processes.
func (c *ControlPlane) Stop() error { return c.Env.Stop() }
