// Package ociregistry is a real OCI distribution-API registry for the dev stack
// and the tests: go-containerregistry's pkg/registry served over TLS, plus
// helpers that push a real image or image index and return its real digest
// (what a build reports as IMAGE_DIGEST). Renovate resolves tags here exactly
// as it does at quay.io; it needs TLS (over plain HTTP it tries HTTPS, fails to
// get a token and exits 0 having opened nothing), hence no plain-HTTP mode.
package ociregistry

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is a running registry. Host is "127.0.0.1:port", the registry part
// of image references (Host + "/ns/repo:tag").
type Registry struct {
	Host string
	// roots trusts the serving certificate: clients (push, resolve) use it.
	roots  *x509.CertPool
	auth   *authn.Basic // nil: anyone may pull and push
	holds  *holds
	server *http.Server
	done   chan error
}

// Start serves a registry on addr ("127.0.0.1:0" for any free port) over TLS
// with cert, a certificate for addr's host signed by the CA in roots (the dev
// CA in the dev stack, a test CA in tests: see NewCA).
func Start(addr string, cert tls.Certificate, roots *x509.CertPool) (*Registry, error) {
	return start(addr, cert, roots, nil)
}

// StartWithNewCA is Start on 127.0.0.1 (addr "127.0.0.1:0" for any free port)
// with a new CA and a certificate it signed for 127.0.0.1: the CA is what the
// registry's clients (Renovate through a trusted bundle) must trust.
func StartWithNewCA(addr string) (*Registry, *CA, error) {
	ca, err := NewCA()
	if err != nil {
		return nil, nil, err
	}
	cert, err := ca.ServingCert("127.0.0.1")
	if err != nil {
		return nil, nil, err
	}
	reg, err := Start(addr, cert, ca.Pool())
	if err != nil {
		return nil, nil, err
	}
	return reg, ca, nil
}

// StartPrivate is Start for a registry that answers nobody without the
// username and password: every request without them gets 401 and a Basic
// challenge (as a private repository of a registry with basic auth does; quay.io
// challenges with Bearer and its token service instead). The push helpers log in.
func StartPrivate(addr string, cert tls.Certificate, roots *x509.CertPool, username, password string) (*Registry, error) {
	if username == "" || password == "" {
		return nil, errors.New("start a private OCI registry: empty username or password")
	}
	return start(addr, cert, roots, &authn.Basic{Username: username, Password: password})
}

func start(addr string, cert tls.Certificate, roots *x509.CertPool, auth *authn.Basic) (*Registry, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for the OCI registry on %s: %w", addr, err)
	}
	// The default logger prints every request; the registry's own errors
	// reach clients as distribution-API errors, so nothing is lost.
	var handler http.Handler = registry.New(registry.Logger(log.New(discard{}, "", 0)))
	if auth != nil {
		handler = requireBasicAuth(handler, auth)
	}
	h := &holds{byRepo: map[string]*hold{}}
	handler = h.wrap(handler)
	r := &Registry{
		Host:  ln.Addr().String(),
		roots: roots,
		auth:  auth,
		holds: h,
		server: &http.Server{
			Handler:           handler,
			TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
			ReadHeaderTimeout: 10 * time.Second,
		},
		done: make(chan error, 1),
	}
	go func() { r.done <- r.server.ServeTLS(ln, "", "") }()
	return r, nil
}

// Close stops the registry; its content is gone (it lives in memory).
func (r *Registry) Close() error {
	if r.server == nil {
		return nil // a client from Dial
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.server.Shutdown(ctx); err != nil {
		return fmt.Errorf("stop the OCI registry: %w", err)
	}
	if err := <-r.done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("OCI registry server: %w", err)
	}
	return nil
}

// Transport trusts the registry's certificate; remote.WithTransport(r.Transport()).
func (r *Registry) Transport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: r.roots, MinVersion: tls.VersionTLS12}
	return t
}

// PushImage pushes a new single-platform image (one small random layer, so every
// push is a new digest, as every build is) to repo:tag ("ns/operand:tag") and
// returns its manifest digest, "sha256:...".
func (r *Registry) PushImage(ctx context.Context, repoTag string) (string, error) {
	img, err := random.Image(256, 1)
	if err != nil {
		return "", fmt.Errorf("make a random image for %s: %w", repoTag, err)
	}
	return r.write(ctx, repoTag, func(ref name.Reference, opts ...remote.Option) error { return remote.Write(ref, img, opts...) }, img.Digest)
}

// PushIndex pushes a multi-arch image index of one random image per platform
// ("linux/amd64", "linux/arm64", ...) to repo:tag and returns the index digest,
// the digest a multi-arch build reports.
func (r *Registry) PushIndex(ctx context.Context, repoTag string, platforms ...string) (string, error) {
	if len(platforms) == 0 {
		return "", fmt.Errorf("push index %s: no platforms", repoTag)
	}
	var idx v1.ImageIndex = empty.Index
	for _, p := range platforms {
		plat, err := v1.ParsePlatform(p)
		if err != nil {
			return "", fmt.Errorf("push index %s: platform %q: %w", repoTag, p, err)
		}
		img, err := random.Image(256, 1)
		if err != nil {
			return "", fmt.Errorf("make a random image for %s (%s): %w", repoTag, p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	return r.write(ctx, repoTag, func(ref name.Reference, opts ...remote.Option) error { return remote.WriteIndex(ref, idx, opts...) }, idx.Digest)
}

func (r *Registry) write(ctx context.Context, repoTag string, push func(name.Reference, ...remote.Option) error, digest func() (v1.Hash, error)) (string, error) {
	ref, err := name.ParseReference(r.Host + "/" + repoTag)
	if err != nil {
		return "", fmt.Errorf("parse image reference %s/%s: %w", r.Host, repoTag, err)
	}
	if err := push(ref, r.remoteOptions(ctx)...); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := digest()
	if err != nil {
		return "", fmt.Errorf("digest of %s: %w", ref, err)
	}
	return d.String(), nil
}

// Resolve returns the digest repo:tag points at, as a registry client sees it.
func (r *Registry) Resolve(ctx context.Context, repoTag string) (string, error) {
	ref, err := name.ParseReference(r.Host + "/" + repoTag)
	if err != nil {
		return "", fmt.Errorf("parse image reference %s/%s: %w", r.Host, repoTag, err)
	}
	desc, err := remote.Head(ref, r.remoteOptions(ctx)...)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", ref, err)
	}
	return desc.Digest.String(), nil
}

func (r *Registry) remoteOptions(ctx context.Context) []remote.Option {
	opts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(r.Transport())}
	if r.auth != nil {
		opts = append(opts, remote.WithAuth(r.auth))
	}
	return opts
}

// requireBasicAuth answers 401 with the distribution API's error body and a
// Basic challenge to every request without the credentials.
func requireBasicAuth(next http.Handler, auth *authn.Basic) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		user, pass, ok := req.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(auth.Username)) != 1 ||
			subtle.ConstantTimeCompare([]byte(pass), []byte(auth.Password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="nudgeflow test registry"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`))
			return
		}
		next.ServeHTTP(w, req)
	})
}

// Hold makes every request for repo ("ns/name") wait until release is called
// or its client goes away, so a test can catch a client (Renovate) in the
// middle of a lookup; reached is closed when the first such request arrives.
// Requests for other repositories are served as usual.
func (r *Registry) Hold(repo string) (reached <-chan struct{}, release func()) {
	h := &hold{reached: make(chan struct{}), released: make(chan struct{})}
	r.holds.mu.Lock()
	r.holds.byRepo[repo] = h
	r.holds.mu.Unlock()
	var once sync.Once
	return h.reached, func() {
		once.Do(func() {
			r.holds.mu.Lock()
			delete(r.holds.byRepo, repo)
			r.holds.mu.Unlock()
			close(h.released)
		})
	}
}

type hold struct {
	reachedOnce sync.Once
	reached     chan struct{}
	released    chan struct{}
}

type holds struct {
	mu     sync.Mutex
	byRepo map[string]*hold
}

func (hs *holds) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hs.mu.Lock()
		var h *hold
		for repo, candidate := range hs.byRepo {
			if strings.HasPrefix(req.URL.Path, "/v2/"+repo+"/") {
				h = candidate
			}
		}
		hs.mu.Unlock()
		if h != nil {
			h.reachedOnce.Do(func() { close(h.reached) })
			select {
			case <-h.released:
			case <-req.Context().Done():
				return
			}
		}
		next.ServeHTTP(w, req)
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
