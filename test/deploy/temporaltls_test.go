package deploy_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nudgeflow/nudgeflow/test/ociregistry"
	"github.com/nudgeflow/nudgeflow/test/world"
)

// The manifests connect to Temporal with mutual TLS (deploy/base/temporal.env). The
// test world's Temporal is a dev server, plaintext on loopback. A pod started
// from the manifests reaches it through a TLS front that does what a production
// frontend with mTLS does: it presents a certificate for 127.0.0.1 signed by its
// CA (ca.crt of the Secret nudgeflow-temporal-tls), requires a client certificate
// signed by the client CA (tls.crt of that Secret), and then forwards the gRPC
// stream (HTTP/2, negotiated by ALPN) to the dev server.

// temporalTLSSecretName is the Secret the manifests mount for mutual TLS.
const temporalTLSSecretName = "nudgeflow-temporal-tls"

// temporalPKI is the frontend's CA and serving certificate and the client
// certificate an operator puts in the Secret, shared by the package.
type temporalPKI struct {
	serving  tls.Certificate
	clientCA *ociregistry.CA
	// secret is the Secret's data: tls.crt, tls.key, ca.crt.
	secret map[string][]byte
}

var (
	temporalPKIOnce sync.Once
	temporalPKIVal  *temporalPKI
	temporalPKIErr  error
)

func testTemporalPKI(t *testing.T) *temporalPKI {
	t.Helper()
	temporalPKIOnce.Do(func() {
		temporalPKIVal, temporalPKIErr = newTemporalPKI()
	})
	require.NoError(t, temporalPKIErr)
	return temporalPKIVal
}

func newTemporalPKI() (*temporalPKI, error) {
	serverCA, err := ociregistry.NewCA()
	if err != nil {
		return nil, err
	}
	clientCA, err := ociregistry.NewCA()
	if err != nil {
		return nil, err
	}
	serving, err := serverCA.ServingCert("127.0.0.1", "localhost")
	if err != nil {
		return nil, err
	}
	client, err := clientCA.ClientCert("nudgeflow")
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := ociregistry.PEM(client)
	if err != nil {
		return nil, err
	}
	return &temporalPKI{serving: serving, clientCA: clientCA,
		secret: map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": serverCA.PEM}}, nil
}

// temporalTLSSecret creates the Secret nudgeflow-temporal-tls in ns, as an operator
// does before applying (deploy/README.md, Installing, step 4).
func temporalTLSSecret(t *testing.T, ns string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: temporalTLSSecretName, Namespace: ns},
		Type: corev1.SecretTypeOpaque, Data: testTemporalPKI(t).secret}
	if err := world.Get(t).Kube.Create(context.Background(), s); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err, "creating Secret %s/%s", ns, temporalTLSSecretName)
	}
}

// temporalFront is a TLS front of a plaintext Temporal dev server.
type temporalFront struct {
	addr string
	mu   sync.Mutex
	// clients are the common names of the client certificates it verified.
	clients []string
}

// startTemporalFront listens on loopback and forwards every connection that
// presents a client certificate of the client CA to backend (dialled for each
// connection: a backend that is down is an outage to the client, as it would be).
// It stops with the test.
func startTemporalFront(t *testing.T, backend string) *temporalFront {
	t.Helper()
	pki := testTemporalPKI(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{pki.serving},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pki.clientCA.Pool(),
		NextProtos:   []string{"h2"}, // gRPC requires it
		MinVersion:   tls.VersionTLS12,
	})
	require.NoError(t, err)
	f := &temporalFront{addr: ln.Addr().String()}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				f.forward(conn.(*tls.Conn), backend, done)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		close(done)
		wg.Wait()
	})
	return f
}

func (f *temporalFront) forward(c *tls.Conn, backend string, done <-chan struct{}) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.Handshake(); err != nil {
		return // no or an unknown client certificate: refused, as a frontend would
	}
	_ = c.SetDeadline(time.Time{})
	f.mu.Lock()
	f.clients = append(f.clients, c.ConnectionState().PeerCertificates[0].Subject.CommonName)
	f.mu.Unlock()
	b, err := net.Dial("tcp", backend)
	if err != nil {
		return
	}
	defer b.Close()
	// Until either side closes, or the test ends; the deferred closes end the other
	// copy.
	copied := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, c); copied <- struct{}{} }()
	go func() { _, _ = io.Copy(c, b); copied <- struct{}{} }()
	select {
	case <-copied:
	case <-done:
	}
}

// verified are the client certificates' names of the connections it forwarded.
func (f *temporalFront) verified() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.clients...)
}
