package localenv

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"

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
	// APIServerPort is kube-apiserver's secure port on 127.0.0.1; a free one when zero.
	APIServerPort int
	// DieWithParentDir, when set, makes kube-apiserver and etcd die with this
	// process on Linux: they start through parent-death shims written there (see
	// HandleParentDeathExec, which the running binary's main must call). Call
	// StartControlPlane inside OnLongLivedThread then.
	DieWithParentDir string
}

// ControlPlane is a running kube-apiserver + etcd with every CRD installed.
type ControlPlane struct {
	Env    *envtest.Environment
	Config *rest.Config
}

// CRDDirs are nudgeflow's own CRDs and the test CRDs of the Konflux and Tekton kinds it reads.
func CRDDirs() []string {
	root := RepoRoot()
	return []string{filepath.Join(root, "deploy", "crds"), filepath.Join(root, "test", "crds")}
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
		CRDDirectoryPaths:     append(CRDDirs(), opts.ExtraCRDDirs...),
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: opts.WebhookManifests},
	}
	apiServer := env.ControlPlane.GetAPIServer()
	apiServer.Out, apiServer.Err = opts.Log, opts.Log
	if opts.APIServerPort != 0 {
		apiServer.SecureServing.Address = "127.0.0.1"
		apiServer.SecureServing.Port = strconv.Itoa(opts.APIServerPort)
	}
	env.ControlPlane.Etcd = &envtest.Etcd{Out: opts.Log, Err: opts.Log, DataDir: opts.EtcdDataDir}
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
