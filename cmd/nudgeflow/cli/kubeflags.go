package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/internal/kube"
)

// kubeFlags are kubectl's client flags, resolved the way kubectl resolves them:
// --kubeconfig, else $KUBECONFIG, else ~/.kube/config; the namespace from -n, else the
// current context's, else "default".
type kubeFlags struct {
	kubeconfig    string
	context       string
	namespace     string
	allNamespaces bool
	withAll       bool
	// qps and burst limit requests on the client side; qps 0 means no limit (see
	// addRateFlags).
	qps   float32
	burst int
}

// addKubeFlags registers the flags on cmd; allowAll adds -A/--all-namespaces.
func addKubeFlags(cmd *cobra.Command, allowAll bool) *kubeFlags {
	f := &kubeFlags{withAll: allowAll}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "the kubeconfig context to use")
	fs.StringVarP(&f.namespace, "namespace", "n", "", "the namespace (default: the context's namespace)")
	if allowAll {
		fs.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "every namespace")
	}
	return f
}

// addRateFlags adds the client-side rate limit flags, for the long-running
// commands (worker, bridge). Without them client-go would limit every client to 5
// requests per second (burst 10): a worker resolving thousands of ChangeGroups would
// queue behind its own limiter. Like controller-runtime's GetConfig, nudgeflow
// leaves the limit off by default and relies on the API server's Priority and
// Fairness; the worker's in-flight requests are bounded by its activity slots.
func (f *kubeFlags) addRateFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.Float32Var(&f.qps, "kube-api-qps", 0, "client-side limit of Kubernetes API requests per second (0: no client-side limit, the API server's Priority and Fairness applies)")
	fs.IntVar(&f.burst, "kube-api-burst", 0, "burst of Kubernetes API requests above --kube-api-qps (default twice the QPS)")
}

// restConfig is the client configuration with the rate limit applied.
func (f *kubeFlags) restConfig() (*rest.Config, error) {
	cfg, err := f.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	if f.qps > 0 {
		cfg.QPS, cfg.Burst = f.qps, f.burst
		if cfg.Burst <= 0 {
			cfg.Burst = int(2 * f.qps)
		}
	} else {
		cfg.QPS = -1 // client-go's default limiter off (controller-runtime does the same)
	}
	return cfg, nil
}

func (f *kubeFlags) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: f.context}
	overrides.Context.Namespace = f.namespace
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

// resolve returns a client and the selected namespace ("" with -A): what every
// subcommand that reads the cluster starts with.
func (f *kubeFlags) resolve() (ctrlclient.Client, string, error) {
	ns, err := f.targetNamespace()
	if err != nil {
		return nil, "", err
	}
	c, err := f.client()
	return c, ns, err
}

// client is a client of the selected cluster with nudgeflow's scheme.
func (f *kubeFlags) client() (ctrlclient.Client, error) {
	cfg, err := f.restConfig()
	if err != nil {
		return nil, err
	}
	c, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: kube.NewScheme()})
	if err != nil {
		return nil, fmt.Errorf("creating a Kubernetes client for %s: %w", cfg.Host, err)
	}
	return c, nil
}

// targetNamespace is the selected namespace, "" with -A.
func (f *kubeFlags) targetNamespace() (string, error) {
	if f.allNamespaces {
		if f.namespace != "" {
			return "", errors.New("--namespace and --all-namespaces exclude each other")
		}
		return "", nil
	}
	ns, _, err := f.clientConfig().Namespace()
	if err != nil {
		return "", fmt.Errorf("resolving the namespace from kubeconfig: %w", err)
	}
	return ns, nil
}
