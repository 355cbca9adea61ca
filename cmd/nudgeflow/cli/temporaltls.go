package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
)

// temporalSecurity is how nudgeflow authenticates to a Temporal frontend that is
// not a local dev server: TLS (server CA, server name), mTLS (a client
// certificate, as self-hosted Temporal and Temporal Cloud accept) and API keys
// (Temporal Cloud). Flags and environment variables are the Temporal CLI's
// (temporalio/cli temporalcli/commands.yml; the legacy TEMPORAL_TLS_CERT,
// TEMPORAL_TLS_KEY and TEMPORAL_TLS_CA it still reads are read too). A flag wins
// over its environment variable.
//
// Like the CLI, TLS is on as soon as an API key or any TLS option is given;
// --tls=false (or TEMPORAL_TLS=false) turns it off explicitly. Unlike the CLI,
// plaintext to anything but a loopback address needs that explicit opt-out:
// Temporal is a privilege boundary (whoever can signal a workflow can steer a
// tenant's pull request), so a connection nobody configured is never silently in
// the clear. A local dev server (make run, the tests) is on loopback.
//
// The API key is never a flag default (cobra would print it in --help), never
// logged, and never leaves the client's credentials.
type temporalSecurity struct {
	fs                      *pflag.FlagSet
	tls                     bool
	certPath, keyPath       string
	caPath, serverName      string
	disableHostVerification bool
	apiKey                  string
	apiKeyFile              string
}

// Environment variables, newest name first (the Temporal CLI's).
var (
	envTLS                     = []string{"TEMPORAL_TLS"}
	envTLSCert                 = []string{"TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CERT"}
	envTLSKey                  = []string{"TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_KEY"}
	envTLSCA                   = []string{"TEMPORAL_TLS_SERVER_CA_CERT_PATH", "TEMPORAL_TLS_CA"}
	envTLSServerName           = []string{"TEMPORAL_TLS_SERVER_NAME"}
	envTLSDisableHostVerifying = []string{"TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"}
	envAPIKey                  = []string{"TEMPORAL_API_KEY"}
	envAPIKeyFile              = []string{"TEMPORAL_API_KEY_FILE"}
)

func addTemporalSecurityFlags(fs *pflag.FlagSet) *temporalSecurity {
	s := &temporalSecurity{fs: fs}
	fs.BoolVar(&s.tls, "tls", false, "connect to Temporal with TLS; on by default when an API key or another TLS option is set ($TEMPORAL_TLS)")
	fs.StringVar(&s.certPath, "tls-cert-path", "", "client certificate for mTLS ($TEMPORAL_TLS_CLIENT_CERT_PATH, $TEMPORAL_TLS_CERT)")
	fs.StringVar(&s.keyPath, "tls-key-path", "", "client certificate's private key for mTLS ($TEMPORAL_TLS_CLIENT_KEY_PATH, $TEMPORAL_TLS_KEY)")
	fs.StringVar(&s.caPath, "tls-ca-path", "", "CA certificate(s) that sign the Temporal frontend's certificate; the system's roots when empty ($TEMPORAL_TLS_SERVER_CA_CERT_PATH, $TEMPORAL_TLS_CA)")
	fs.StringVar(&s.serverName, "tls-server-name", "", "server name to verify the frontend's certificate against, when it differs from the address's host ($TEMPORAL_TLS_SERVER_NAME)")
	fs.BoolVar(&s.disableHostVerification, "tls-disable-host-verification", false, "do not verify the frontend's certificate at all (testing only; $TEMPORAL_TLS_DISABLE_HOST_VERIFICATION)")
	fs.StringVar(&s.apiKey, "api-key", "", "API key sent as a bearer token, for Temporal Cloud ($TEMPORAL_API_KEY; prefer the variable: flags show in process lists)")
	fs.StringVar(&s.apiKeyFile, "api-key-file", "", "file holding the API key, read again when it changes so a rotated key (a mounted Secret) is used without a restart ($TEMPORAL_API_KEY_FILE; not with --api-key)")
	return s
}

// resolve fills what no flag set from the environment.
func (s *temporalSecurity) resolve() (resolved temporalSecurity, tlsExplicit bool, err error) {
	r := *s
	str := func(flag string, v *string, env []string) {
		if s.fs.Changed(flag) {
			return
		}
		for _, name := range env {
			if e := os.Getenv(name); e != "" {
				*v = e
				return
			}
		}
	}
	boolean := func(flag string, v *bool, env []string) (bool, error) {
		if s.fs.Changed(flag) {
			return true, nil
		}
		for _, name := range env {
			if e := os.Getenv(name); e != "" {
				b, err := strconv.ParseBool(e)
				if err != nil {
					return false, fmt.Errorf("$%s=%q is not a boolean", name, e)
				}
				*v = b
				return true, nil
			}
		}
		return false, nil
	}
	str("tls-cert-path", &r.certPath, envTLSCert)
	str("tls-key-path", &r.keyPath, envTLSKey)
	str("tls-ca-path", &r.caPath, envTLSCA)
	str("tls-server-name", &r.serverName, envTLSServerName)
	str("api-key", &r.apiKey, envAPIKey)
	str("api-key-file", &r.apiKeyFile, envAPIKeyFile)
	if tlsExplicit, err = boolean("tls", &r.tls, envTLS); err != nil {
		return r, false, err
	}
	if _, err = boolean("tls-disable-host-verification", &r.disableHostVerification, envTLSDisableHostVerifying); err != nil {
		return r, false, err
	}
	return r, tlsExplicit, nil
}

// apply sets TLS and credentials on opts.
func (s *temporalSecurity) apply(opts *client.Options) error {
	r, tlsExplicit, err := s.resolve()
	if err != nil {
		return err
	}
	cfg, err := r.tlsConfig(tlsExplicit, opts.HostPort)
	if err != nil {
		return err
	}
	if cfg == nil && !tlsExplicit && !loopback(opts.HostPort) {
		return fmt.Errorf("refusing plaintext to the Temporal frontend %s: set mTLS (--tls-cert-path, --tls-key-path; "+
			"$TEMPORAL_TLS_CLIENT_CERT_PATH, $TEMPORAL_TLS_CLIENT_KEY_PATH), an API key, or TLS, "+
			"or opt out explicitly with --tls=false ($TEMPORAL_TLS=false)", opts.HostPort)
	}
	opts.ConnectionOptions.TLS = cfg
	switch {
	case r.apiKey != "" && r.apiKeyFile != "":
		return errors.New("an API key and an API key file are both set: keep one")
	case r.apiKey != "":
		opts.Credentials = client.NewAPIKeyStaticCredentials(r.apiKey)
	case r.apiKeyFile != "":
		key := &reloadingFile{path: r.apiKeyFile, what: "the Temporal API key"}
		if _, err := key.read(); err != nil {
			return err
		}
		opts.Credentials = client.NewAPIKeyDynamicCredentials(func(context.Context) (string, error) {
			b, err := key.read()
			return trimNewline(string(b)), err
		})
	}
	return nil
}

// loopback: the address names this machine (localhost or a loopback IP), where a
// plaintext connection leaves no host.
func loopback(hostPort string) bool {
	host := hostPort
	if h, _, err := net.SplitHostPort(hostPort); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// reloadingFile is a credential file read again on each use, so that what a
// rotation writes (the kubelet swaps a mounted Secret's files at once) is used by
// the next request or handshake. A read that fails after a good one keeps the last
// good content: a file briefly missing must not break every call.
type reloadingFile struct {
	path, what string
	mu         sync.Mutex
	last       []byte
}

func (f *reloadingFile) read() ([]byte, error) {
	b, err := os.ReadFile(f.path)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil && len(bytes.TrimSpace(b)) > 0 {
		f.last = b
		return b, nil
	}
	if f.last != nil {
		return f.last, nil
	}
	if err == nil {
		err = errors.New("the file is empty")
	}
	return nil, fmt.Errorf("reading %s from %s: %w", f.what, f.path, err)
}

// describe says how the connection is secured, for logs; never the key itself.
func (s *temporalSecurity) describe() []any {
	r, tlsExplicit, err := s.resolve()
	if err != nil {
		return nil
	}
	return []any{"tls", r.tlsOn(tlsExplicit), "mtls", r.certPath != "", "apiKey", r.apiKey != "" || r.apiKeyFile != ""}
}

func (s *temporalSecurity) tlsOn(explicit bool) bool {
	if explicit {
		return s.tls
	}
	return s.apiKey != "" || s.apiKeyFile != "" || s.certPath != "" || s.keyPath != "" || s.caPath != "" || s.serverName != "" || s.disableHostVerification
}

// tlsConfig is nil when TLS is off. The client certificate and the server CA are
// read again at each TLS handshake, so what a rotation writes on disk
// (cert-manager, a mounted Secret) is used by the next connection without a
// restart; they are read once here too, so a wrong path fails at start.
func (s *temporalSecurity) tlsConfig(explicit bool, hostPort string) (*tls.Config, error) {
	if !s.tlsOn(explicit) {
		if s.certPath != "" || s.keyPath != "" || s.caPath != "" {
			return nil, errors.New("TLS options are set but TLS is turned off (--tls=false or $TEMPORAL_TLS=false)")
		}
		return nil, nil
	}
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         s.serverName,
		InsecureSkipVerify: s.disableHostVerification,
	}
	if s.caPath != "" {
		// The name gRPC verifies by default: the server name, else the address's host.
		name := s.serverName
		if name == "" {
			name = hostPort
			if host, _, err := net.SplitHostPort(hostPort); err == nil {
				name = host
			}
		}
		if err := verifyWithReloadedCA(cfg, s.caPath, name); err != nil {
			return nil, err
		}
	}
	if s.certPath != "" || s.keyPath != "" {
		if s.certPath == "" || s.keyPath == "" {
			return nil, errors.New("mTLS needs both a client certificate (--tls-cert-path) and its key (--tls-key-path)")
		}
		certPath, keyPath := s.certPath, s.keyPath
		load := func() (*tls.Certificate, error) {
			pair, err := tls.LoadX509KeyPair(certPath, keyPath)
			if err != nil {
				return nil, fmt.Errorf("loading the Temporal client certificate %s: %w", certPath, err)
			}
			return &pair, nil
		}
		if _, err := load(); err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return load() }
	}
	return cfg, nil
}

// verifyWithReloadedCA makes cfg verify the server's certificate chain and name
// against the CA file as it is at each handshake. crypto/tls reads RootCAs once,
// so the standard verification is replaced by the same one with a fresh pool:
// InsecureSkipVerify only turns off the built-in check, VerifyConnection runs
// it again (the chain to the file's CAs, and serverName: --tls-server-name or the
// address's host, as gRPC would check; the handshake's own SNI name is empty for
// an IP address, so it cannot stand in).
func verifyWithReloadedCA(cfg *tls.Config, caPath, serverName string) error {
	ca := &reloadingFile{path: caPath, what: "the Temporal server CA"}
	pool := func() (*x509.CertPool, error) {
		pem, err := ca.read()
		if err != nil {
			return nil, err
		}
		p := x509.NewCertPool()
		if !p.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no PEM certificate in the Temporal server CA file %s", caPath)
		}
		return p, nil
	}
	if _, err := pool(); err != nil {
		return err
	}
	if cfg.InsecureSkipVerify {
		return nil // --tls-disable-host-verification: nothing is verified
	}
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		roots, err := pool()
		if err != nil {
			return err
		}
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the Temporal frontend presented no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, DNSName: serverName, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
			return fmt.Errorf("verifying the Temporal frontend's certificate: %w", err)
		}
		return nil
	}
	return nil
}
