package ownership

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pacv1alpha1 "github.com/nudgeflow/nudgeflow/api/mirror/pipelinesascode/v1alpha1"
)

// The claim index is rebuilt at most once per indexTTL, and whenever the claim it
// is asked about is younger than indexMargin before the index was built (so a
// claim older than it, made just before, is never missed; the margin also covers
// clock skew between the API server, which stamps creationTimestamp, and here).
const (
	indexTTL    = time.Minute
	indexMargin = time.Minute
	// listPage bounds what one list of Repositories holds in memory: Pipelines as
	// Code keeps each one's recent runs in it.
	listPage = 500
)

// Checker applies the rule with live reads. One per worker process: a check reads
// the binding ConfigMap and the namespace's own Repositories every time, and the
// other namespaces' claims from an index of every Repository's spec.url, rebuilt
// at most once a minute. The index is only ever trusted to say that no OLDER claim
// exists elsewhere when it was built after the namespace's claim; an older claim it
// names is read again before it refuses anything.
type Checker struct {
	// Reader reads Repositories and the binding ConfigMap.
	Reader client.Reader
	// BindingNamespace is nudgeflow's own namespace, which holds the cluster
	// admin's binding ConfigMap; "" reads no binding.
	BindingNamespace string
	// Events records the Warning Event of a refusal (Require); nil records none.
	Events client.Writer
	// Now is the clock of the index (time.Now when nil).
	Now func() time.Time

	mu    sync.Mutex
	index *claimIndex
}

type claimIndex struct {
	built time.Time
	byKey map[string][]Claim
}

// Lazy is an activity's checker: the one it was given, else one it makes on first
// use and keeps (with its index).
type Lazy struct {
	once sync.Once
	c    *Checker
}

// Get returns given when it is not nil, else the checker made by def, once.
func (l *Lazy) Get(given *Checker, def func() *Checker) *Checker {
	l.once.Do(func() {
		if l.c = given; l.c == nil {
			l.c = def()
		}
	})
	return l.c
}

// NotOwnedError is a refusal: namespace does not own the repository. Its text says
// why and what to create; it never names another tenant's namespace.
type NotOwnedError struct {
	Namespace string
	// URL is the repository as the request named it.
	URL string
	// Owner is the namespace that owns it ("" when none): for the worker's logs
	// only, never in Error().
	Owner  string
	Why    string
	Remedy string
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("namespace %s does not own repository %s, so nudgeflow neither writes to it nor mints a token for it: %s. %s",
		e.Namespace, e.URL, e.Why, e.Remedy)
}

// Check returns nil when namespace owns repoURL, a *NotOwnedError when it does
// not, and another error when the cluster could not be read (worth retrying).
func (c *Checker) Check(ctx context.Context, namespace, repoURL string) error {
	key, err := Key(repoURL)
	if err != nil {
		return &NotOwnedError{Namespace: namespace, URL: repoURL,
			Why:    fmt.Sprintf("nudgeflow cannot tell who owns it (%v)", err),
			Remedy: "Set the Component's spec.source.git.url to the repository's https://<host>/<owner>/<name> URL"}
	}
	bindings, err := c.bindings(ctx)
	if err != nil {
		return err
	}
	if v := decide(key, bindings, nil); v.Source == sourceBinding {
		if v.Owner == namespace {
			return nil
		}
		return c.refusal(namespace, repoURL, v, nil)
	}
	mine, err := c.claimsIn(ctx, namespace, key)
	if err != nil {
		return err
	}
	if len(mine) == 0 {
		// The index (as it is, not rebuilt) only words the message.
		return c.refusal(namespace, repoURL, decide(key, nil, c.peek(key)), nil)
	}
	oldest := mine[0]
	for _, m := range mine[1:] {
		if m.Before(oldest) {
			oldest = m
		}
	}
	older, err := c.olderClaims(ctx, key, oldest)
	if err != nil {
		return err
	}
	v := decide(key, nil, append(older, mine...))
	if v.Owner == namespace {
		return nil
	}
	return c.refusal(namespace, repoURL, v, mine)
}

// Require is Check for an activity: nil when namespace owns repoURL; a refusal is
// recorded as a Warning Event on the object on refers to (when on and Events are
// set) and returned as a non-retryable ApplicationError of type ErrorType; a
// failed read is returned as it is, to be retried.
func (c *Checker) Require(ctx context.Context, namespace, repoURL string, on *corev1.ObjectReference) error {
	err := c.Check(ctx, namespace, repoURL)
	var refused *NotOwnedError
	if !errors.As(err, &refused) {
		return err
	}
	if on != nil && c.Events != nil {
		if eerr := recordEvent(ctx, c.Events, *on, refused); eerr != nil {
			// Retried: the next try refuses again and records the Event then.
			return fmt.Errorf("%v (and recording the %s Event failed: %w)", refused, EventReason, eerr)
		}
	}
	return asApplicationError(refused)
}

// asApplicationError is the non-retryable ApplicationError of type ErrorType for a
// refusal in err's chain; other errors are returned as they are.
func asApplicationError(err error) error {
	var refused *NotOwnedError
	if !errors.As(err, &refused) {
		return err
	}
	return temporal.NewNonRetryableApplicationError(refused.Error(), ErrorType, nil)
}

// IsRefusal reports whether err is a refusal, as a *NotOwnedError or as the
// ApplicationError of type ErrorType it travels as.
func IsRefusal(err error) bool {
	var refused *NotOwnedError
	var ae *temporal.ApplicationError
	return errors.As(err, &refused) || (errors.As(err, &ae) && ae.Type() == ErrorType)
}

// recordEvent writes the Warning Event of a refusal on obj, in the refused
// namespace, named by the object and the repository (its Key: every way of writing
// its URL), so a retry, or another activity refused for the same repository, writes
// none twice.
func recordEvent(ctx context.Context, w client.Writer, obj corev1.ObjectReference, refused *NotOwnedError) error {
	repo, err := Key(refused.URL)
	if err != nil {
		repo = refused.URL
	}
	sum := sha256.Sum256([]byte(refused.Namespace + "\x00" + repo))
	now := metav1.NewTime(time.Now())
	obj.Namespace = refused.Namespace
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: refused.Namespace,
			Name:   fmt.Sprintf("%s.repositorynotowned-%s", obj.Name, hex.EncodeToString(sum[:8])),
			Labels: map[string]string{"app.kubernetes.io/managed-by": "nudgeflow"}},
		InvolvedObject: obj,
		Reason:         EventReason, Message: refused.Error(), Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "nudgeflow"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if err := w.Create(ctx, ev); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("recording the %s Event on %s %s/%s: %w", EventReason, obj.Kind, obj.Namespace, obj.Name, err)
	}
	return nil
}

// refusal words why namespace does not own the repository (v: who does), and
// what would make it the owner.
func (c *Checker) refusal(namespace, repoURL string, v Verdict, mine []Claim) *NotOwnedError {
	e := &NotOwnedError{Namespace: namespace, URL: repoURL, Owner: v.Owner}
	spec := specURL(repoURL)
	binding := fmt.Sprintf("ConfigMap %s/%s", c.BindingNamespace, BindingConfigMap)
	bindIt := ""
	if c.BindingNamespace != "" {
		bindIt = fmt.Sprintf("the cluster admin adds %s as a line of key %q in %s", spec, namespace, binding)
	}
	switch {
	case v.Source == sourceBinding && v.Owner == "":
		e.Why = fmt.Sprintf("the cluster admin's %s binds it to more than one namespace, so none owns it", binding)
		e.Remedy = fmt.Sprintf("The cluster admin must keep %s under key %q only", spec, namespace)
	case v.Source == sourceBinding:
		e.Why = fmt.Sprintf("the cluster admin's %s binds it to another namespace", binding)
		e.Remedy = fmt.Sprintf("If namespace %s should own it, the cluster admin moves %s to key %q", namespace, spec, namespace)
	case v.Owner != "":
		e.Why = "an older Pipelines as Code Repository in another namespace names it (the oldest Repository naming a repository owns it)"
		if len(mine) > 0 {
			e.Why += fmt.Sprintf("; Repository %s in namespace %s was created after it", mine[0].Name, namespace)
		}
		e.Remedy = "Only that namespace can nudge it, until it deletes its Repository"
		if bindIt != "" {
			e.Remedy += "; or " + bindIt
		}
	default:
		e.Why = fmt.Sprintf("no Pipelines as Code Repository in namespace %s names it", namespace)
		e.Remedy = fmt.Sprintf("Create a Repository (apiVersion pipelinesascode.tekton.dev/v1alpha1, kind Repository) in namespace %s with spec.url: %s "+
			"(build-service creates it when it onboards the Component)", namespace, spec)
		if bindIt != "" {
			e.Remedy += "; on a cluster without Pipelines as Code, " + bindIt
		}
	}
	return e
}

// bindings is the binding ConfigMap's data (nil when there is none).
func (c *Checker) bindings(ctx context.Context) (map[string]string, error) {
	if c.BindingNamespace == "" {
		return nil, nil
	}
	var cm corev1.ConfigMap
	err := c.Reader.Get(ctx, types.NamespacedName{Namespace: c.BindingNamespace, Name: BindingConfigMap}, &cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the repository bindings ConfigMap %s/%s: %w", c.BindingNamespace, BindingConfigMap, err)
	}
	return cm.Data, nil
}

// claimsIn lists namespace's Repositories that name key.
func (c *Checker) claimsIn(ctx context.Context, namespace, key string) ([]Claim, error) {
	var out []Claim
	err := c.list(ctx, []client.ListOption{client.InNamespace(namespace)}, func(cl Claim) {
		if k, err := Key(cl.URL); err == nil && k == key {
			out = append(out, cl)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("listing the Pipelines as Code Repositories of namespace %s: %w", namespace, err)
	}
	return out, nil
}

// olderClaims are the live claims on key in other namespaces that are older than
// mine. Each one the index names is read again: a deleted or changed Repository
// claims nothing any more.
func (c *Checker) olderClaims(ctx context.Context, key string, mine Claim) ([]Claim, error) {
	candidates, err := c.indexed(ctx, key, mine.Created)
	if err != nil {
		return nil, err
	}
	var out []Claim
	for _, cand := range candidates {
		if cand.Namespace == mine.Namespace || !cand.Before(mine) {
			continue
		}
		var r pacv1alpha1.Repository
		err := c.Reader.Get(ctx, types.NamespacedName{Namespace: cand.Namespace, Name: cand.Name}, &r)
		if apierrors.IsNotFound(err) {
			c.invalidate()
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading Pipelines as Code Repository %s/%s: %w", cand.Namespace, cand.Name, err)
		}
		live := claimOf(&r)
		if k, kerr := Key(live.URL); kerr != nil || k != key || live.UID != cand.UID || r.DeletionTimestamp != nil {
			c.invalidate()
			continue
		}
		out = append(out, live)
	}
	return out, nil
}

// indexed is the index's claims on key, rebuilt first when it is older than
// indexTTL or not built well after a claim created at since.
func (c *Checker) indexed(ctx context.Context, key string, since time.Time) ([]Claim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.index == nil || now.Sub(c.index.built) >= indexTTL || !c.index.built.After(since.Add(indexMargin)) {
		idx := &claimIndex{built: now, byKey: map[string][]Claim{}}
		err := c.list(ctx, nil, func(cl Claim) {
			if k, err := Key(cl.URL); err == nil {
				idx.byKey[k] = append(idx.byKey[k], cl)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("listing the Pipelines as Code Repositories of every namespace: %w", err)
		}
		c.index = idx
	}
	return append([]Claim(nil), c.index.byKey[key]...), nil
}

// peek is the index's claims on key as they are (none before the first build).
func (c *Checker) peek(key string) []Claim {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.index == nil {
		return nil
	}
	return append([]Claim(nil), c.index.byKey[key]...)
}

func (c *Checker) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.index = nil
}

func (c *Checker) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// list pages through Repositories, calling each for every live one. A cluster
// that does not serve the kind (no Pipelines as Code) has none.
func (c *Checker) list(ctx context.Context, opts []client.ListOption, each func(Claim)) error {
	cont := ""
	for {
		var page pacv1alpha1.RepositoryList
		err := c.Reader.List(ctx, &page, append(opts, client.Limit(listPage), client.Continue(cont))...)
		if meta.IsNoMatchError(err) {
			return nil
		}
		if err != nil {
			return err
		}
		for i := range page.Items {
			if page.Items[i].DeletionTimestamp == nil {
				each(claimOf(&page.Items[i]))
			}
		}
		if cont = page.Continue; cont == "" {
			return nil
		}
	}
}

func claimOf(r *pacv1alpha1.Repository) Claim {
	return Claim{Namespace: r.Namespace, Name: r.Name, UID: r.UID, Created: r.CreationTimestamp.Time, URL: r.Spec.URL}
}
