package receiver_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	"github.com/nudgeflow/nudgeflow/bridge/receiver"
	"github.com/nudgeflow/nudgeflow/bridge/receiverapi"
)

// fakeBridge hands the receiver the bindings a test sends, and takes events until
// a test closes release.
type fakeBridge struct {
	bindings chan receiverapi.Bindings
	events   chan forgehook.Event
	release  chan struct{}
}

func newFakeBridge() *fakeBridge {
	return &fakeBridge{bindings: make(chan receiverapi.Bindings, 1), events: make(chan forgehook.Event, 100), release: make(chan struct{})}
}

func (b *fakeBridge) Watch(ctx context.Context, _ *slog.Logger, update func(receiverapi.Bindings)) {
	for {
		select {
		case <-ctx.Done():
			return
		case v := <-b.bindings:
			update(v)
		}
	}
}

func (b *fakeBridge) PullRequestEvent(ctx context.Context, e forgehook.Event) error {
	b.events <- e
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return nil
}

func start(t *testing.T, o receiver.Options) (*receiver.Receiver, string, string) {
	t.Helper()
	r, err := receiver.New(o)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	health, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, l, health, nil) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	return r, "http://" + l.Addr().String() + "/", "http://" + health.Addr().String()
}

func delivery(t *testing.T, url, repo, secret string) *http.Request {
	t.Helper()
	body := `{"action":"edited","number":1,"pull_request":{"number":1,"html_url":"https://github.com/` + repo + `/pull/1","state":"open","head":{"ref":"b"}},` +
		`"repository":{"full_name":"` + repo + `","html_url":"https://github.com/` + repo + `"}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
	return req
}

func status(t *testing.T, req *http.Request) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// Until the bound secrets are read the receiver is not ready and answers 503: the
// shared secret must not verify a repository that may be bound. Then a bound
// repository takes its own secret only.
func TestNotReadyUntilTheBindingsAreRead(t *testing.T) {
	b := newFakeBridge()
	close(b.release)
	r, url, health := start(t, receiver.Options{SharedSecret: forgehook.StaticSecret([]byte("shared")), Bridge: b})
	require.False(t, r.Ready())
	require.Equal(t, http.StatusServiceUnavailable, status(t, delivery(t, url, "org/app", "shared")))
	code, err := http.Get(health + "/readyz")
	require.NoError(t, err)
	code.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, code.StatusCode)

	b.bindings <- receiverapi.BindingsFrom([]corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Name: "a",
		Labels:      map[string]string{receiverapi.LabelWebhookSecret: "true"},
		Annotations: map[string]string{receiverapi.AnnotationWebhookNamespace: "tenant-a", receiverapi.AnnotationWebhookRepositories: "https://github.com/org/app"}},
		Data: map[string][]byte{receiverapi.SecretKey: []byte("a-own")}}})
	require.Eventually(t, r.Ready, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, http.StatusUnauthorized, status(t, delivery(t, url, "org/app", "shared")), "a bound repository refuses the shared secret")
	require.Equal(t, http.StatusAccepted, status(t, delivery(t, url, "org/app", "a-own")))
	require.Equal(t, "tenant-a", (<-b.events).Namespace)
	require.Equal(t, http.StatusAccepted, status(t, delivery(t, url, "org/other", "shared")))
	require.Equal(t, "", (<-b.events).Namespace)
}

// At most MaxConcurrent deliveries are handled at once: one more is answered 503
// at once, not queued; at most MaxConns connections are held: one more is closed.
func TestBoundedConcurrencyAndConnections(t *testing.T) {
	b := newFakeBridge()
	r, url, _ := start(t, receiver.Options{SharedSecret: forgehook.StaticSecret([]byte("shared")), Bridge: b, MaxConcurrent: 2, MaxConns: 4})
	b.bindings <- receiverapi.Bindings{}
	require.Eventually(t, r.Ready, 10*time.Second, 10*time.Millisecond)
	held := make(chan int, 2)
	for range 2 {
		go func() { held <- status(t, delivery(t, url, "org/app", "shared")) }()
	}
	<-b.events
	<-b.events
	require.Equal(t, http.StatusServiceUnavailable, status(t, delivery(t, url, "org/app", "shared")), "a third delivery while two are handled")
	close(b.release)
	require.Equal(t, http.StatusAccepted, <-held)
	require.Equal(t, http.StatusAccepted, <-held)
	http.DefaultClient.CloseIdleConnections()

	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")
	var conns []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// The listener accepts in order: once a fifth connection is closed by the
	// server, the first four are held.
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err = c.Read(make([]byte, 1))
		return err == io.EOF
	}, 10*time.Second, 50*time.Millisecond, "a connection beyond the bound is closed at once")
	conns[0].Close()
	conns = conns[1:]
	require.Eventually(t, func() bool {
		req := delivery(t, url, "org/app", "shared")
		req.Close = true
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusAccepted
	}, 10*time.Second, 50*time.Millisecond, "a closed connection frees its slot")
}
