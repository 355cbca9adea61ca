package devenv

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// HomeEnv overrides where `nudgeflow-dev dev` keeps its state.
const HomeEnv = "NUDGEFLOW_DEV_HOME"

// Home is the state folder: $NUDGEFLOW_DEV_HOME, else
// ${XDG_CACHE_HOME:-~/.cache}/nudgeflow/dev.
func Home() (string, error) {
	if h := os.Getenv(HomeEnv); h != "" {
		return filepath.Abs(h)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the cache folder: %w", err)
	}
	return filepath.Join(cache, "nudgeflow", "dev"), nil
}

// Files inside the state folder.
const (
	fileKubeconfig = "kubeconfig"
	fileTemporalDB = "temporal.db"
	fileEmulator   = "emulator.json"
	// fileGitLabEmulator holds the GitLab emulator's state.
	fileGitLabEmulator = "gitlab-emulator.json"
	fileTokens         = "forge-tokens.json"
	fileRunning        = "running.json"
	dirEtcd            = "etcd"
	dirLogs            = "logs"
	dirShims           = "bin" // the parent-death shims (localenv.HandleParentDeathExec)
	// dirForgejo holds the Gitea server's state with --forgejo: app.ini, SQLite,
	// repositories and the users' tokens (users.json, 0600).
	dirForgejo = "forgejo"
)

// Running describes a started environment. `nudgeflow-dev dev` writes it before it
// starts anything (Owner), again once the servers run (Children, TempDirs) and
// when ready (the addresses), and removes it when it stops; the simulator
// subcommands read it. After a crash it tells the next start what to stop.
type Running struct {
	PID int `json:"pid"` // Owner.PID
	// Owner is the `nudgeflow-dev dev` process; Children the servers it started
	// (kube-apiserver, etcd, temporal, gitea with --forgejo); TempDirs the folders envtest made outside the state.
	Owner    Proc     `json:"owner"`
	Children []Proc   `json:"children,omitempty"`
	TempDirs []string `json:"tempDirs,omitempty"`

	Kubeconfig      string `json:"kubeconfig"`
	APIServer       string `json:"apiServer"`
	TemporalAddress string `json:"temporalAddress"`
	TemporalUI      string `json:"temporalUI"`
	Namespace       string `json:"temporalNamespace"`
	ForgeURL        string `json:"forgeURL"`
	ForgeHookURL    string `json:"forgeHookURL"`
	GitLabURL       string `json:"gitlabURL,omitempty"`
	ForgejoURL      string `json:"forgejoURL,omitempty"` // with --forgejo
	// Registry is the image registry's host, "127.0.0.1:port".
	Registry string `json:"registry,omitempty"`
	// RenovateLogs holds each Renovate run's log: <namespace>/<run>.log.
	RenovateLogs string `json:"renovateLogs,omitempty"`
	Logs         string `json:"logs"`
}

// ReadRunning reads what the running, ready `nudgeflow-dev dev` in home wrote.
func ReadRunning(home string) (*Running, error) {
	r, err := readRunningFile(home)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no running `nudgeflow-dev dev` in %s: start it with `make run`", home)
	}
	if err != nil {
		return nil, err
	}
	if !r.ownerAlive() {
		return nil, fmt.Errorf("`nudgeflow-dev dev` (pid %d) with %s is no longer running: start it again with `make run`", r.PID, home)
	}
	if r.Kubeconfig == "" {
		return nil, fmt.Errorf("`nudgeflow-dev dev` (pid %d) with %s is still starting: wait for it to print ready", r.PID, home)
	}
	return r, nil
}

// readRunningFile reads running.json as it is, whoever wrote it.
func readRunningFile(home string) (*Running, error) {
	path := filepath.Join(home, fileRunning)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the running environment: %w", err)
	}
	var r Running
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return &r, nil
}

// ownerAlive reports whether the `nudgeflow-dev dev` that wrote r still runs.
func (r *Running) ownerAlive() bool {
	if r.Owner.PID == 0 { // written before running.json named its owner: the pid only
		return processAlive(r.PID)
	}
	return r.Owner.Alive() && r.Owner.PID != os.Getpid()
}

// tokens are the forge credentials of the local world, made once and kept so the
// Secret in the persisted cluster keeps working after a restart. They only ever
// authenticate against the local emulator.
type tokens struct {
	Bot           string `json:"bot"`
	Maintainer    string `json:"maintainer"`
	WebhookSecret string `json:"webhookSecret"`
	// BoundWebhookSecret is the demo namespace's own webhook secret, bound to its
	// bundle repositories (localbridge.BoundSecret).
	BoundWebhookSecret string `json:"boundWebhookSecret,omitempty"`
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func loadTokens(home string) (*tokens, error) {
	path := filepath.Join(home, fileTokens)
	b, err := os.ReadFile(path)
	t := &tokens{Bot: "ghs_" + randomHex(18), Maintainer: "ghp_" + randomHex(18), WebhookSecret: randomHex(16)}
	switch {
	case err == nil:
		t = &tokens{}
		if err := json.Unmarshal(b, t); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if t.BoundWebhookSecret != "" {
			return t, nil
		}
		// A home from before the bound secret: add it, keep the rest.
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("reading forge tokens: %w", err)
	}
	t.BoundWebhookSecret = randomHex(16)
	b, _ = json.Marshal(t)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("writing forge tokens: %w", err)
	}
	return t, nil
}

// writeKubeconfig writes an admin kubeconfig for cfg whose context's namespace is ns.
func writeKubeconfig(path string, cfg *rest.Config, ns string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["nudgeflow-dev"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["nudgeflow-dev-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["nudgeflow-dev"] = &clientcmdapi.Context{Cluster: "nudgeflow-dev", AuthInfo: "nudgeflow-dev-admin", Namespace: ns}
	kc.CurrentContext = "nudgeflow-dev"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
