package receiverapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
)

// defaultLongPoll is how long a secrets request that already holds the current
// revision waits for a change before it is answered 304.
const defaultLongPoll = 30 * time.Second

// Source is where the bridge reads the bound secrets.
type Source interface {
	// Bindings are the bound secrets now; an error while they cannot be read
	// (the informer has not synced).
	Bindings(ctx context.Context) (Bindings, error)
	// Changed is closed at the next change after the call.
	Changed() <-chan struct{}
}

// Server is the bridge's side of the API.
type Server struct {
	Secrets Source
	Sink    forgehook.Sink
	// Auth authenticates a request's bearer token (NewTokenAuthenticator).
	Auth authenticator.Request
	// Identity is the only user served: the receiver's ServiceAccount
	// (system:serviceaccount:<namespace>:<name>).
	Identity string
	// LongPoll is DefaultLongPoll when zero.
	LongPoll time.Duration
	Log      *slog.Logger
}

// Registrar is where handlers are served (the manager's webhook server).
type Registrar interface {
	Register(path string, h http.Handler)
}

// Register serves both paths on r.
func (s *Server) Register(r Registrar) {
	r.Register(SecretsPath, s.authenticated(http.MethodGet, http.HandlerFunc(s.serveSecrets)))
	r.Register(EventsPath, s.authenticated(http.MethodPost, http.HandlerFunc(s.serveEvent)))
}

func (s *Server) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

// authenticated serves h to Identity only, for method only. The TokenReview is
// cached (NewTokenAuthenticator), so a receiver's requests cost the API server
// one review a minute.
func (s *Server) authenticated(method string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		// The token must be for Audience: the review asks the API server for it (a
		// token for the API server itself, or any other audience, is refused).
		r = r.WithContext(authenticator.WithAudiences(r.Context(), authenticator.Audiences{Audience}))
		res, ok, err := s.Auth.AuthenticateRequest(r)
		if err != nil {
			s.log().Warn("receiver API: authentication failed", "path", r.URL.Path, "error", err)
		}
		if err != nil || !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if name := res.User.GetName(); name != s.Identity {
			s.log().Warn("receiver API: refused a caller that is not the receiver", "path", r.URL.Path, "user", name)
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// serveSecrets answers the bound secrets, with their revision as ETag. A request
// whose If-None-Match is the current revision waits for a change (at most
// LongPoll) and is answered 304 when none came.
func (s *Server) serveSecrets(w http.ResponseWriter, r *http.Request) {
	poll := s.LongPoll
	if poll <= 0 {
		poll = defaultLongPoll
	}
	known := strings.Trim(r.Header.Get("If-None-Match"), `"`)
	deadline := time.NewTimer(poll)
	defer deadline.Stop()
	for {
		changed := s.Secrets.Changed()
		b, err := s.Secrets.Bindings(r.Context())
		if err != nil {
			s.log().Error("receiver API: bound webhook secrets unavailable", "error", err)
			http.Error(w, "bound webhook secrets unavailable", http.StatusServiceUnavailable)
			return
		}
		if known == "" || b.Revision != known {
			w.Header().Set("ETag", `"`+b.Revision+`"`)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			_ = json.NewEncoder(w).Encode(b)
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			w.WriteHeader(http.StatusNotModified)
			return
		case <-r.Context().Done():
			return
		}
	}
}

// serveEvent routes one event the receiver verified, after checking it again:
// 202 when the sink took it, 400 when it is malformed or not one pull request of
// its repository, 503 when the sink failed (the receiver answers the forge so).
func (s *Server) serveEvent(w http.ResponseWriter, r *http.Request) {
	var e forgehook.Event
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxEventBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		http.Error(w, "malformed event", http.StatusBadRequest)
		return
	}
	if err := e.Check(); err != nil {
		s.log().Warn("receiver API: refused an event", "delivery", e.DeliveryID, "error", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := s.Sink.PullRequestEvent(r.Context(), e); err != nil {
		s.log().Error("pull request event not accepted", "delivery", e.DeliveryID, "repo", e.Repo, "pr", e.Number, "error", err)
		http.Error(w, "not accepted", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// NewTokenAuthenticator authenticates bearer tokens by TokenReview, for the
// audiences of the request's context (Server sets Audience), answers cached for a
// minute.
func NewTokenAuthenticator(cfg *rest.Config, httpClient *http.Client) (authenticator.Request, error) {
	reviews, err := authenticationv1.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("receiver API: a TokenReview client: %w", err)
	}
	auth, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: false},
		TokenAccessReviewClient:  reviews,
		TokenAccessReviewTimeout: 10 * time.Second,
		CacheTTL:                 time.Minute,
		APIAudiences:             authenticator.Audiences{Audience},
		// As controller-runtime's metrics filter (and kube-apiserver's defaults).
		WebhookRetryBackoff: &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5},
	}.New()
	if err != nil {
		return nil, fmt.Errorf("receiver API: the token authenticator: %w", err)
	}
	return auth, nil
}

// InformerSource reads the bound Secrets of one namespace from an informer that
// lists and watches only the labelled ones.
type InformerSource struct {
	cache     cache.Cache
	namespace string
	synced    func() bool

	mu      sync.Mutex
	changed chan struct{}
}

// NewInformerSource builds the informer on mgr's connection and adds it to mgr
// (it starts with the manager, on every replica: the receiver may call any).
func NewInformerSource(mgr ctrl.Manager, namespace string) (*InformerSource, error) {
	if namespace == "" {
		return nil, errors.New("receiver API: the bound webhook secrets need a namespace")
	}
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		ByObject: map[ctrlclient.Object]cache.ByObject{
			&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{LabelWebhookSecret: "true"})},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("receiver API: the bound webhook secrets' informer: %w", err)
	}
	inf, err := c.GetInformer(context.Background(), &corev1.Secret{}, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("receiver API: the bound webhook secrets' informer: %w", err)
	}
	src := &InformerSource{cache: c, namespace: namespace, changed: make(chan struct{})}
	notify := func(any) { src.notify() }
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: notify, UpdateFunc: func(_, o any) { notify(o) }, DeleteFunc: notify,
	})
	if err != nil {
		return nil, fmt.Errorf("receiver API: watching the bound webhook secrets: %w", err)
	}
	src.synced = reg.HasSynced
	if err := mgr.Add(everyReplica{c}); err != nil {
		return nil, err
	}
	return src, nil
}

// HasSynced reports whether the bound webhook secrets' informer has synced (the
// bridge's readiness waits for it).
func (s *InformerSource) HasSynced() bool { return s.synced() }

// everyReplica runs the cache on every replica, not the leader only: the receiver
// calls whichever replica the webhook Service picks. (A cache with per-object
// options is not one the manager recognises as such, and would wait for the
// leader election.)
type everyReplica struct{ cache.Cache }

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (everyReplica) NeedLeaderElection() bool { return false }

func (s *InformerSource) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.changed)
	s.changed = make(chan struct{})
}

// Changed implements Source.
func (s *InformerSource) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Bindings implements Source, from the informer's store (no API call).
func (s *InformerSource) Bindings(ctx context.Context) (Bindings, error) {
	if !s.synced() {
		return Bindings{}, errors.New("the bound webhook secrets' informer has not synced yet")
	}
	var list corev1.SecretList
	if err := s.cache.List(ctx, &list, ctrlclient.InNamespace(s.namespace)); err != nil {
		return Bindings{}, fmt.Errorf("listing the bound webhook secrets of %s: %w", s.namespace, err)
	}
	return BindingsFrom(list.Items), nil
}
