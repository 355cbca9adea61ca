package cli

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// A Temporal frontend stand-in that speaks TLS the way a production frontend
// does (self-hosted with mTLS, or Temporal Cloud): it presents a certificate for
// frontendName signed by its own CA, requires a client certificate signed by the
// client CA, answers the gRPC health check the readiness probes use, and records
// what each caller sent (metadata, client certificate).

const frontendName = "frontend.temporal.example"

type pki struct {
	dir                      string
	serverCA, clientCA       *x509.Certificate
	serverCAKey, clientCAKey *ecdsa.PrivateKey
}

func newPKI(t *testing.T) *pki {
	p := &pki{dir: t.TempDir()}
	p.serverCA, p.serverCAKey = selfSigned(t, "server CA")
	p.clientCA, p.clientCAKey = selfSigned(t, "client CA")
	writePEM(t, filepath.Join(p.dir, "server-ca.crt"), "CERTIFICATE", p.serverCA.Raw)
	return p
}

func selfSigned(t *testing.T, cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return cert, key
}

// leaf issues a certificate; it returns the tls pair and writes NAME.crt/NAME.key.
func (p *pki) leaf(t *testing.T, name, cn string, dns []string, server bool) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ca, caKey, usage := p.clientCA, p.clientCAKey, x509.ExtKeyUsageClientAuth
	if server {
		ca, caKey, usage = p.serverCA, p.serverCAKey, x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile := filepath.Join(p.dir, name+".crt"), filepath.Join(p.dir, name+".key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	require.NoError(t, err)
	return pair
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

func writePEM(t *testing.T, path, kind string, der []byte) {
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
}

type call struct {
	method        string
	authorization []string
	clientCN      string
}

type fakeFrontend struct {
	workflowservice.UnimplementedWorkflowServiceServer
	addr  string
	mu    sync.Mutex
	calls []call
}

func startFrontend(t *testing.T, p *pki) *fakeFrontend {
	serverPair := p.leaf(t, "server", "frontend", []string{frontendName}, true)
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(p.clientCA)
	f := &fakeFrontend{}
	record := func(ctx context.Context, method string) {
		c := call{method: method}
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			c.authorization = md.Get("authorization")
		}
		if pr, ok := peer.FromContext(ctx); ok {
			if info, ok := pr.AuthInfo.(credentials.TLSInfo); ok && len(info.State.PeerCertificates) > 0 {
				c.clientCN = info.State.PeerCertificates[0].Subject.CommonName
			}
		}
		f.mu.Lock()
		f.calls = append(f.calls, c)
		f.mu.Unlock()
	}
	srv := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{serverPair}, ClientCAs: clientCAs,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
		})),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			record(ctx, info.FullMethod)
			return h(ctx, req)
		}),
	)
	workflowservice.RegisterWorkflowServiceServer(srv, f)
	hs := health.NewServer()
	hs.SetServingStatus("temporal.api.workflowservice.v1.WorkflowService", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f.addr = l.Addr().String()
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return f
}

func (f *fakeFrontend) GetSystemInfo(ctx context.Context, _ *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	return &workflowservice.GetSystemInfoResponse{}, nil
}

func (f *fakeFrontend) seen() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// temporalCommand parses args (and the environment) the way `nudgeflow worker` does.
func temporalCommand(t *testing.T, args ...string) (*temporalFlags, *cobra.Command) {
	cmd := &cobra.Command{Use: "worker", RunE: func(*cobra.Command, []string) error { return nil }}
	tf := addTemporalFlags(cmd)
	require.NoError(t, cmd.ParseFlags(args))
	return tf, cmd
}

// dialAndCheck connects like the worker and runs the readiness probe's check.
func dialAndCheck(t *testing.T, tf *temporalFlags) error {
	opts, err := tf.clientOptions()
	if err != nil {
		return err
	}
	return connectAndCheck(opts)
}

// connectAndCheck opens a connection with opts and runs the readiness check on it.
func connectAndCheck(opts client.Options) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
	return err
}

// Every Temporal variable the tests touch, cleared so the machine's own cannot leak in.
func clearTemporalEnv(t *testing.T) {
	for _, list := range [][]string{envTLS, envTLSCert, envTLSKey, envTLSCA, envTLSServerName, envTLSDisableHostVerifying, envAPIKey, {"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE"}} {
		for _, name := range list {
			t.Setenv(name, "")
		}
	}
}

const apiKey = "tmprl-api-key-that-must-never-be-printed-0001"

// mTLS with the Temporal CLI's environment variables, a server name that differs
// from the address, and an API key: the handshake verifies the frontend against
// the given CA and name, presents the client certificate, and every call carries
// the key as a bearer token.
func TestTemporalMTLSAndAPIKeyFromEnvironment(t *testing.T) {
	clearTemporalEnv(t)
	p := newPKI(t)
	p.leaf(t, "worker", "nudgeflow-worker", nil, false)
	f := startFrontend(t, p)
	t.Setenv("TEMPORAL_ADDRESS", f.addr)
	t.Setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", p.path("worker.crt"))
	t.Setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", p.path("worker.key"))
	t.Setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", p.path("server-ca.crt"))
	t.Setenv("TEMPORAL_TLS_SERVER_NAME", frontendName)
	t.Setenv("TEMPORAL_API_KEY", apiKey)
	tf, cmd := temporalCommand(t)

	require.NoError(t, dialAndCheck(t, tf))
	calls := f.seen()
	require.NotEmpty(t, calls)
	var sawHealth bool
	for _, c := range calls {
		require.Equal(t, "nudgeflow-worker", c.clientCN, "%s: the client certificate is presented", c.method)
		require.Equal(t, []string{"Bearer " + apiKey}, c.authorization, "%s: the API key is the credentials", c.method)
		sawHealth = sawHealth || c.method == "/grpc.health.v1.Health/Check"
	}
	require.True(t, sawHealth, "the readiness check is the gRPC health check: %v", calls)

	// The key is in no help text and no log line.
	var help bytes.Buffer
	cmd.SetOut(&help)
	require.NoError(t, cmd.Help())
	require.NotContains(t, help.String(), apiKey)
	require.NotContains(t, fmt.Sprint(tf.security.describe()...), apiKey)
	require.Equal(t, []any{"tls", true, "mtls", true, "apiKey", true}, tf.security.describe())
}

// The Temporal CLI's legacy variables (TEMPORAL_TLS_CERT, _KEY, _CA) still work;
// flags win over variables.
func TestTemporalLegacyVariablesAndFlags(t *testing.T) {
	clearTemporalEnv(t)
	p := newPKI(t)
	p.leaf(t, "legacy", "from-legacy-env", nil, false)
	p.leaf(t, "flag", "from-flag", nil, false)
	f := startFrontend(t, p)
	t.Setenv("TEMPORAL_TLS_CERT", p.path("legacy.crt"))
	t.Setenv("TEMPORAL_TLS_KEY", p.path("legacy.key"))
	t.Setenv("TEMPORAL_TLS_CA", p.path("server-ca.crt"))

	tf, _ := temporalCommand(t, "--temporal-address", f.addr, "--tls-server-name", frontendName)
	require.NoError(t, dialAndCheck(t, tf))
	require.Equal(t, "from-legacy-env", f.seen()[0].clientCN)
	require.Empty(t, f.seen()[0].authorization, "no API key, no authorization header")

	tf, _ = temporalCommand(t, "--temporal-address", f.addr, "--tls-server-name", frontendName,
		"--tls-cert-path", p.path("flag.crt"), "--tls-key-path", p.path("flag.key"))
	n := len(f.seen())
	require.NoError(t, dialAndCheck(t, tf))
	require.Equal(t, "from-flag", f.seen()[n].clientCN)
}

// What must fail does, before or at the handshake.
func TestTemporalTLSRefusals(t *testing.T) {
	clearTemporalEnv(t)
	p := newPKI(t)
	p.leaf(t, "worker", "nudgeflow-worker", nil, false)
	other := newPKI(t) // a CA that signed nothing of this frontend's
	f := startFrontend(t, p)
	base := []string{"--temporal-address", f.addr, "--tls-ca-path", p.path("server-ca.crt"),
		"--tls-cert-path", p.path("worker.crt"), "--tls-key-path", p.path("worker.key")}

	tf, _ := temporalCommand(t, base...) // the address's host, 127.0.0.1, is not the certificate's name
	require.ErrorContains(t, dialAndCheck(t, tf), "certificate")

	tf, _ = temporalCommand(t, append(base, "--tls-server-name", frontendName, "--tls-ca-path", other.path("server-ca.crt"))...)
	require.ErrorContains(t, dialAndCheck(t, tf), "certificate", "an unknown CA is refused")

	tf, _ = temporalCommand(t, "--temporal-address", f.addr, "--tls-server-name", frontendName, "--tls-ca-path", p.path("server-ca.crt"))
	require.Error(t, dialAndCheck(t, tf), "the frontend requires a client certificate")

	tf, _ = temporalCommand(t, append(base, "--tls-server-name", frontendName, "--tls-disable-host-verification")...)
	require.NoError(t, dialAndCheck(t, tf), "verification off (testing only) accepts any server name")

	tf, _ = temporalCommand(t, "--tls-cert-path", p.path("worker.crt"))
	require.ErrorContains(t, dialAndCheck(t, tf), "both a client certificate")

	tf, _ = temporalCommand(t, "--tls-ca-path", p.path("worker.key"))
	require.ErrorContains(t, dialAndCheck(t, tf), "no PEM certificate")

	tf, _ = temporalCommand(t, "--tls=false", "--tls-ca-path", p.path("server-ca.crt"))
	require.ErrorContains(t, dialAndCheck(t, tf), "TLS is turned off")

	t.Setenv("TEMPORAL_TLS", "maybe")
	tf, _ = temporalCommand(t)
	require.ErrorContains(t, dialAndCheck(t, tf), "TEMPORAL_TLS")
}

// An API key alone turns TLS on with the system's roots (Temporal Cloud);
// --tls=false sends it in the clear (a dev server); nothing set means plain.
func TestTemporalTLSDefaults(t *testing.T) {
	clearTemporalEnv(t)
	t.Setenv("TEMPORAL_API_KEY", apiKey)
	tf, _ := temporalCommand(t)
	opts, err := tf.clientOptions()
	require.NoError(t, err)
	require.NotNil(t, opts.ConnectionOptions.TLS)
	require.Nil(t, opts.ConnectionOptions.TLS.RootCAs, "the system's roots")
	require.NotNil(t, opts.Credentials)

	tf, _ = temporalCommand(t, "--tls=false")
	opts, err = tf.clientOptions()
	require.NoError(t, err)
	require.Nil(t, opts.ConnectionOptions.TLS)
	require.NotNil(t, opts.Credentials)

	clearTemporalEnv(t)
	tf, _ = temporalCommand(t)
	opts, err = tf.clientOptions()
	require.NoError(t, err)
	require.Nil(t, opts.ConnectionOptions.TLS)
	require.Nil(t, opts.Credentials)
}

// Plaintext leaves the machine only when asked for: nothing set is plain to a
// loopback address (a local dev server) and refused to any other; --tls=false or
// TEMPORAL_TLS=false is the explicit opt-out.
func TestTemporalPlaintextOnlyToLoopbackUnlessExplicit(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:7233", "localhost:7233", "[::1]:7233", "127.0.0.53:7233"} {
		clearTemporalEnv(t)
		tf, _ := temporalCommand(t, "--temporal-address", addr)
		opts, err := tf.clientOptions()
		require.NoError(t, err, addr)
		require.Nil(t, opts.ConnectionOptions.TLS, addr)
	}
	for _, addr := range []string{"temporal-frontend.temporal.svc.cluster.local:7233", "10.0.0.7:7233", "localhost.example.com:7233"} {
		clearTemporalEnv(t)
		tf, _ := temporalCommand(t, "--temporal-address", addr)
		_, err := tf.clientOptions()
		require.ErrorContains(t, err, "refusing plaintext to the Temporal frontend "+addr, addr)
		require.ErrorContains(t, err, "--tls=false", "the error names the opt-out")

		tf, _ = temporalCommand(t, "--temporal-address", addr, "--tls=false")
		opts, err := tf.clientOptions()
		require.NoError(t, err, "%s with --tls=false", addr)
		require.Nil(t, opts.ConnectionOptions.TLS)

		t.Setenv("TEMPORAL_TLS", "false")
		tf, _ = temporalCommand(t, "--temporal-address", addr)
		opts, err = tf.clientOptions()
		require.NoError(t, err, "%s with TEMPORAL_TLS=false", addr)
		require.Nil(t, opts.ConnectionOptions.TLS)

		t.Setenv("TEMPORAL_TLS", "true")
		tf, _ = temporalCommand(t, "--temporal-address", addr)
		opts, err = tf.clientOptions()
		require.NoError(t, err, "%s with TEMPORAL_TLS=true", addr)
		require.NotNil(t, opts.ConnectionOptions.TLS)
	}
}

// A client certificate rotated on disk is what the next handshake presents.
func TestTemporalClientCertificateRotation(t *testing.T) {
	clearTemporalEnv(t)
	p := newPKI(t)
	p.leaf(t, "worker", "before-rotation", nil, false)
	tf, _ := temporalCommand(t, "--tls-cert-path", p.path("worker.crt"), "--tls-key-path", p.path("worker.key"))
	opts, err := tf.clientOptions()
	require.NoError(t, err)
	get := opts.ConnectionOptions.TLS.GetClientCertificate
	cn := func() string {
		pair, err := get(&tls.CertificateRequestInfo{})
		require.NoError(t, err)
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		require.NoError(t, err)
		return leaf.Subject.CommonName
	}
	require.Equal(t, "before-rotation", cn())
	p.leaf(t, "worker", "after-rotation", nil, false)
	require.Equal(t, "after-rotation", cn())
}

// An API key read from a file (a mounted Secret) is read again when it changes:
// the next call of the same client carries the rotated key, without a restart.
func TestTemporalAPIKeyFileRotation(t *testing.T) {
	clearTemporalEnv(t)
	p := newPKI(t)
	p.leaf(t, "worker", "nudgeflow-worker", nil, false)
	f := startFrontend(t, p)
	keyFile := filepath.Join(t.TempDir(), "api-key")
	require.NoError(t, os.WriteFile(keyFile, []byte(apiKey+"\n"), 0o600))
	t.Setenv("TEMPORAL_API_KEY_FILE", keyFile)
	tf, cmd := temporalCommand(t, "--temporal-address", f.addr, "--tls-server-name", frontendName, "--tls-ca-path", p.path("server-ca.crt"),
		"--tls-cert-path", p.path("worker.crt"), "--tls-key-path", p.path("worker.key"))
	opts, err := tf.clientOptions()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, opts)
	require.NoError(t, err)
	defer c.Close()
	lastAuthorization := func() []string {
		_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
		require.NoError(t, err)
		calls := f.seen()
		return calls[len(calls)-1].authorization
	}
	require.Equal(t, []string{"Bearer " + apiKey}, lastAuthorization())

	rotated := "tmprl-api-key-rotated-0002"
	require.NoError(t, os.WriteFile(keyFile, []byte(rotated), 0o600))
	require.Equal(t, []string{"Bearer " + rotated}, lastAuthorization(), "the next call carries the rotated key")

	// A file briefly missing mid-rotation keeps the last key rather than failing.
	require.NoError(t, os.Remove(keyFile))
	require.Equal(t, []string{"Bearer " + rotated}, lastAuthorization())

	require.Equal(t, []any{"tls", true, "mtls", true, "apiKey", true}, tf.security.describe())
	var help bytes.Buffer
	cmd.SetOut(&help)
	require.NoError(t, cmd.Help())
	require.Contains(t, help.String(), "$TEMPORAL_API_KEY_FILE")

	tf, _ = temporalCommand(t, "--api-key", apiKey)
	_, err = tf.clientOptions()
	require.ErrorContains(t, err, "keep one", "a key and a key file are refused together")
	tf, _ = temporalCommand(t, "--api-key-file", filepath.Join(t.TempDir(), "missing"))
	_, err = tf.clientOptions()
	require.ErrorContains(t, err, "reading the Temporal API key", "a missing file fails at start")
}

// The server CA file is read again at each handshake: after the frontend moves to a
// certificate of a new CA and the file is rotated, the next connection made with
// the same options trusts the new CA, and no longer the old one.
func TestTemporalServerCARotation(t *testing.T) {
	clearTemporalEnv(t)
	before, after := newPKI(t), newPKI(t)
	before.leaf(t, "worker", "nudgeflow-worker", nil, false)
	oldFrontend := startFrontend(t, before)
	// The new frontend accepts the same client certificate: only the server side rotates.
	after.clientCA, after.clientCAKey = before.clientCA, before.clientCAKey
	newFrontend := startFrontend(t, after)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	copyFile := func(from string) {
		b, err := os.ReadFile(from)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(caFile, b, 0o600))
	}
	copyFile(before.path("server-ca.crt"))
	tf, _ := temporalCommand(t, "--tls-server-name", frontendName, "--tls-ca-path", caFile,
		"--tls-cert-path", before.path("worker.crt"), "--tls-key-path", before.path("worker.key"))
	opts, err := tf.clientOptions()
	require.NoError(t, err)
	connect := func(addr string) error {
		o := opts
		o.HostPort = addr
		return connectAndCheck(o)
	}
	require.NoError(t, connect(oldFrontend.addr))
	require.ErrorContains(t, connect(newFrontend.addr), "certificate", "the new CA is not trusted yet")

	copyFile(after.path("server-ca.crt"))
	require.NoError(t, connect(newFrontend.addr), "the rotated CA is trusted by the next connection")
	require.ErrorContains(t, connect(oldFrontend.addr), "certificate", "the old CA is no longer trusted")
}
