package debugcmd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/nudgeflow/nudgeflow/test/world"
)

// request is one API request the CLI made, as the proxy saw it.
type request struct {
	Method, Path string
	Query        url.Values
	// Accept is what the client asked for; ContentType what the server sent.
	Accept, ContentType string
	Bytes               int64
	// Kind is the kind of the object the server answered with, read from the body
	// (JSON, or protobuf's runtime.Unknown envelope).
	Kind string
}

// recorder is a plain-HTTP proxy in front of the world's API server that
// authenticates as the world's administrator and records every request: the CLI
// talks to it through an ordinary kubeconfig.
type recorder struct {
	srv      *httptest.Server
	inflight sync.WaitGroup
	mu       sync.Mutex
	reqs     []request
}

func newRecorder(t *testing.T, w *world.World) *recorder {
	t.Helper()
	cfg := w.Config()
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatalf("transport of the API server: %v", err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatalf("API server URL %q: %v", cfg.Host, err)
	}
	rec := &recorder{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	rec.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rec.inflight.Add(1)
		defer rec.inflight.Done()
		cw := &countingWriter{ResponseWriter: rw}
		proxy.ServeHTTP(cw, r)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(),
			Accept: r.Header.Get("Accept"), ContentType: cw.Header().Get("Content-Type"), Bytes: cw.n.Load(),
			Kind: kindOf(cw.Header().Get("Content-Type"), cw.body.Bytes())})
		rec.mu.Unlock()
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

// kubeconfig points a client at the proxy, without credentials (the proxy adds them).
func (rec *recorder) kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	raw := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: world, cluster: {server: %q}}]
users: [{name: operator, user: {}}]
contexts: [{name: world, context: {cluster: world, user: operator, namespace: default}}]
current-context: world
`, rec.srv.URL)
	if err := os.WriteFile(path, []byte(raw), 0o600); err != nil {
		t.Fatalf("writing kubeconfig: %v", err)
	}
	return path
}

// take returns the requests recorded since the last take, once none is in flight.
func (rec *recorder) take() []request {
	rec.inflight.Wait()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := rec.reqs
	rec.reqs = nil
	return out
}

type countingWriter struct {
	http.ResponseWriter
	n    atomic.Int64
	body bytes.Buffer
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	c.body.Write(p[:n])
	return n, err
}

// protobufMagic starts every protobuf-encoded Kubernetes object.
var protobufMagic = []byte("k8s\x00")

// kindOf reads the kind of an API response body: the server may answer a
// metadata request in protobuf (PartialObjectMetadata is a built-in type, even
// for a custom resource), and its Content-Type then carries no "as=" parameter.
func kindOf(contentType string, body []byte) string {
	if strings.HasPrefix(contentType, "application/vnd.kubernetes.protobuf") {
		if !bytes.HasPrefix(body, protobufMagic) {
			return ""
		}
		var u runtime.Unknown
		if err := u.Unmarshal(body[len(protobufMagic):]); err != nil {
			return ""
		}
		return u.Kind
	}
	var head struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(body, &head)
	return head.Kind
}

func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

var _ io.Writer = (*countingWriter)(nil)

// pipelineRunRequests are the requests for PipelineRuns.
func pipelineRunRequests(reqs []request) []request {
	var out []request
	for _, r := range reqs {
		if strings.HasPrefix(r.Path, "/apis/tekton.dev/") && strings.Contains(r.Path, "/pipelineruns") {
			out = append(out, r)
		}
	}
	return out
}
