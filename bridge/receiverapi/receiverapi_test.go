package receiverapi_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
	"github.com/nudgeflow/nudgeflow/bridge/receiverapi"
)

// BindingsFrom selects the labelled Secrets that name a namespace, a secret and a
// repository; the revision depends on what they bind, not on their order.
func TestBindingsFrom(t *testing.T) {
	secret := func(name string, labelled bool, tenant, repos string) corev1.Secret {
		s := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{receiverapi.AnnotationWebhookNamespace: tenant, receiverapi.AnnotationWebhookRepositories: repos}},
			Data: map[string][]byte{receiverapi.SecretKey: []byte(name)}}
		if labelled {
			s.Labels = map[string]string{receiverapi.LabelWebhookSecret: "true"}
		}
		return s
	}
	list := []corev1.Secret{
		secret("b", true, "tenant-b", "https://github.com/Org/Bundle.git, https://gitlab.com/g/sub/x"),
		secret("unlabelled", false, "tenant-c", "https://github.com/org/bundle"),
		secret("no-tenant", true, "", "https://github.com/org/bundle"),
		secret("no-repository", true, "tenant-d", " , not a url"),
		secret("a", true, "tenant-a", "https://github.com/org/app"),
	}
	b := receiverapi.BindingsFrom(list)
	require.Equal(t, []receiverapi.Binding{
		{Namespace: "tenant-a", Repositories: []string{"github.com/org/app"}, Secret: []byte("a")},
		{Namespace: "tenant-b", Repositories: []string{"github.com/org/bundle", "gitlab.com/g/sub/x"}, Secret: []byte("b")},
	}, b.Secrets)
	idx := b.Index()
	require.Equal(t, []forgehook.BoundSecret{{Namespace: "tenant-b", Secret: []byte("b")}}, idx["github.com/org/bundle"])
	require.Empty(t, idx["github.com/org/other"])

	reversed := []corev1.Secret{list[4], list[3], list[2], list[1], list[0]}
	require.Equal(t, b.Revision, receiverapi.BindingsFrom(reversed).Revision)
	list[0].Data[receiverapi.SecretKey] = []byte("rotated")
	require.NotEqual(t, b.Revision, receiverapi.BindingsFrom(list).Revision, "a rotated secret is a new revision")
}

// source is a Source whose bindings a test sets.
type source struct {
	mu      sync.Mutex
	b       receiverapi.Bindings
	changed chan struct{}
}

func newSource(secrets ...corev1.Secret) *source {
	return &source{b: receiverapi.BindingsFrom(secrets), changed: make(chan struct{})}
}

func (s *source) Bindings(context.Context) (receiverapi.Bindings, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b, nil
}

func (s *source) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *source) set(secrets ...corev1.Secret) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = receiverapi.BindingsFrom(secrets)
	close(s.changed)
	s.changed = make(chan struct{})
}

// tokens authenticates the bearer tokens it knows.
type tokens map[string]string

func (t tokens) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	name, ok := t[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	if !ok {
		return nil, false, errors.New("unknown token")
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
}

type sinkFunc func(forgehook.Event) error

func (f sinkFunc) PullRequestEvent(_ context.Context, e forgehook.Event) error { return f(e) }

const receiverUser = "system:serviceaccount:nudgeflow-system:nudgeflow-receiver"

// bridge serves the API over TLS as the bridge's webhook server does, and returns a
// client as the receiver builds it (CA and token from files).
func bridge(t *testing.T, s *receiverapi.Server, token string) (*receiverapi.Client, string) {
	t.Helper()
	mux := http.NewServeMux()
	s.Register(registrar{mux})
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "token"), []byte(token+"\n"), 0o600))
	c, err := receiverapi.NewClient(srv.URL, filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token"))
	require.NoError(t, err)
	return c, dir
}

type registrar struct{ mux *http.ServeMux }

func (r registrar) Register(path string, h http.Handler) { r.mux.Handle(path, h) }

func bound(name, tenant, repos string) corev1.Secret {
	return corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{receiverapi.LabelWebhookSecret: "true"},
		Annotations: map[string]string{receiverapi.AnnotationWebhookNamespace: tenant, receiverapi.AnnotationWebhookRepositories: repos}},
		Data: map[string][]byte{receiverapi.SecretKey: []byte(name)}}
}

// The receiver reads the bindings, then each change as it happens (a long poll,
// not a timer); a caller that is not the receiver, or has no valid token, is
// refused both paths.
func TestSecretsLongPollAndIdentity(t *testing.T) {
	src := newSource(bound("a", "tenant-a", "https://github.com/org/app"))
	var events []forgehook.Event
	s := &receiverapi.Server{Secrets: src, Auth: tokens{"receiver-token": receiverUser, "other-token": "system:serviceaccount:tenant-a:default"},
		Identity: receiverUser, LongPoll: time.Minute, Sink: sinkFunc(func(e forgehook.Event) error { events = append(events, e); return nil })}
	c, _ := bridge(t, s, "receiver-token")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	updates := make(chan receiverapi.Bindings, 4)
	go c.Watch(ctx, nil, func(b receiverapi.Bindings) { updates <- b })
	first := <-updates
	require.Len(t, first.Secrets, 1)
	src.set(bound("a", "tenant-a", "https://github.com/org/app"), bound("b", "tenant-b", "https://github.com/org/bundle"))
	select {
	case second := <-updates:
		require.Len(t, second.Secrets, 2)
		require.NotEqual(t, first.Revision, second.Revision)
	case <-time.After(10 * time.Second):
		t.Fatal("a change reaches a waiting receiver at once (the long poll is a minute)")
	}

	e := forgehook.Event{Provider: "github", Action: "opened", Repo: "github.com/org/app", RepoFullName: "org/app", URL: "https://github.com/org/app/pull/1", Number: 1, State: "open"}
	require.NoError(t, c.PullRequestEvent(ctx, e))
	require.Equal(t, []forgehook.Event{e}, events)
	crossed := e
	crossed.URL = "https://github.com/org/bundle/pull/1"
	require.ErrorContains(t, c.PullRequestEvent(ctx, crossed), "400", "the bridge checks again: a pull request of another repository is refused")
	require.Len(t, events, 1)

	for token, want := range map[string]string{"other-token": "403", "forged": "401"} {
		other, _ := bridge(t, s, token)
		_, _, err := other.Fetch(ctx, "")
		require.ErrorContains(t, err, " "+want+":", token)
		require.Error(t, other.PullRequestEvent(ctx, e), token)
	}
	require.Len(t, events, 1, "no event from a caller that is not the receiver")
}

// The client verifies the bridge's certificate against the CA file as it is when
// it connects: another CA's certificate is refused.
func TestClientVerifiesTheBridge(t *testing.T) {
	s := &receiverapi.Server{Secrets: newSource(), Auth: tokens{"t": receiverUser}, Identity: receiverUser}
	c, dir := bridge(t, s, "t")
	_, changed, err := c.Fetch(context.Background(), "")
	require.NoError(t, err)
	require.True(t, changed)
	// Another CA (httptest's servers all share one certificate).
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "another CA"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	fresh, err := receiverapi.NewClient(c.URL, filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token"))
	require.NoError(t, err)
	_, _, err = fresh.Fetch(context.Background(), "")
	var unknown x509.UnknownAuthorityError
	require.ErrorAs(t, err, &unknown, "the bridge's certificate is not signed by the CA now in the file")
}
