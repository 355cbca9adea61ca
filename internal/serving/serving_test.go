package serving_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	"github.com/nudgeflow/nudgeflow/internal/serving"
)

func serve(t *testing.T, srv *http.Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

// A client that announces a body and never sends it holds its connection for the
// read timeout, not forever; a body over the receiver's limit is refused unread.
func TestReceiverLimits(t *testing.T) {
	require.NotZero(t, serving.ReceiverLimits.Read)
	require.NotZero(t, serving.ReceiverLimits.Write)
	require.NotZero(t, serving.ReceiverLimits.Idle)
	h := &forgehook.Handler{Secret: forgehook.StaticSecret([]byte("s")), MaxBody: 1024}
	limits := serving.ReceiverLimits
	limits.Read = 300 * time.Millisecond
	addr := serve(t, limits.Server("", h))

	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	start := time.Now()
	_, err = io.ReadAll(conn) // the server answers (413, unreadable) and closes, or just closes
	require.NoError(t, err, "the server closed the stalled connection before the client's own deadline")
	require.Less(t, time.Since(start), 10*time.Second)

	resp, err := http.Post("http://"+addr+"/", "application/json", strings.NewReader(strings.Repeat("x", 2048)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
}

// HTTP/2 is off unless asked for: the metrics server, offered h2 by a client,
// settles on HTTP/1.1; --enable-http2 gives h2 back.
func TestHTTP2OffByDefault(t *testing.T) {
	o := serving.Metrics{Secure: true}.ServerOptions("127.0.0.1:0")
	require.NotNil(t, o.FilterProvider, "secure serving authenticates and authorizes")
	require.Nil(t, serving.Metrics{}.ServerOptions("0").FilterProvider, "--metrics-secure=false: plain HTTP")

	negotiated := func(m serving.Metrics) string {
		port, err := freePort()
		require.NoError(t, err)
		o := m.ServerOptions(fmt.Sprintf("127.0.0.1:%d", port))
		o.FilterProvider = nil // no API server here; test/deploy scrapes through the filter
		srv, err := metricsserver.NewServer(o, nil, nil)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Start(ctx) }()
		defer func() { cancel(); <-done }()
		var conn *tls.Conn
		require.Eventually(t, func() bool {
			conn, err = tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
			return err == nil
		}, 10*time.Second, 50*time.Millisecond, "the metrics server listens")
		defer conn.Close()
		return conn.ConnectionState().NegotiatedProtocol
	}
	require.Equal(t, "http/1.1", negotiated(serving.Metrics{Secure: true}))
	require.Equal(t, "h2", negotiated(serving.Metrics{Secure: true, EnableHTTP2: true}))
}

// freePort is a TCP port free on 127.0.0.1 when asked.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
