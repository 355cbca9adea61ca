package receiverapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nudgeflow/nudgeflow/bridge/forgehook"
)

// Client is the receiver's side: it reads the bound secrets and forwards verified
// events. It reads its token and the bridge's CA from files on every use, as the
// kubelet rotates the projected token and the CA bundle in place.
type Client struct {
	// URL is the bridge's webhook Service (https://nudgeflow-bridge-webhook.<namespace>.svc).
	URL string
	// TokenFile holds the ServiceAccount token projected for Audience.
	TokenFile string
	http      *http.Client
}

// NewClient is a client of the bridge at url that trusts the CA bundle in caFile
// (PEM, re-read when it changes).
func NewClient(bridgeURL, caFile, tokenFile string) (*Client, error) {
	if bridgeURL == "" || caFile == "" || tokenFile == "" {
		return nil, errors.New("the receiver needs the bridge's URL, its CA bundle and a token file")
	}
	u, err := url.Parse(bridgeURL)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		return nil, fmt.Errorf("the bridge's URL %q is not https://<host>[:port]", bridgeURL)
	}
	host := u.Hostname()
	roots := &caFileRoots{path: caFile}
	if _, err := roots.pool(); err != nil {
		return nil, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // the bridge is in the cluster
	t.TLSClientConfig = &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain is verified by VerifyConnection against the CA bundle as it is
		// now (a rotated service CA is picked up without a restart); Go's own
		// verification would use the pool of when the config was built.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			pool, err := roots.pool()
			if err != nil {
				return err
			}
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the bridge sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err = cs.PeerCertificates[0].Verify(x509.VerifyOptions{DNSName: host, Roots: pool, Intermediates: inter})
			return err
		},
	}
	return &Client{URL: strings.TrimSuffix(bridgeURL, "/"), TokenFile: tokenFile, http: &http.Client{Transport: t}}, nil
}

// caFileRoots is a PEM file's certificates, read again when the file changes.
type caFileRoots struct {
	path string
	mu   sync.Mutex
	raw  []byte
	p    *x509.CertPool
}

func (c *caFileRoots) pool() (*x509.CertPool, error) {
	raw, err := os.ReadFile(c.path)
	if err != nil {
		return nil, fmt.Errorf("reading the bridge's CA bundle: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p != nil && bytes.Equal(raw, c.raw) {
		return c.p, nil
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(raw) {
		return nil, fmt.Errorf("the bridge's CA bundle %s holds no certificate", c.path)
	}
	c.raw, c.p = raw, p
	return p, nil
}

func (c *Client) request(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	token, err := os.ReadFile(c.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("reading the receiver's token: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	return req, nil
}

// PullRequestEvent forwards a verified event (forgehook.Sink).
func (c *Client) PullRequestEvent(ctx context.Context, e forgehook.Event) error {
	raw, err := json.Marshal(e)
	if err != nil {
		return err
	}
	req, err := c.request(ctx, http.MethodPost, EventsPath, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("forwarding the event to the bridge: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("the bridge answered the event %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}

// Fetch reads the bound secrets; with the revision the caller holds it waits for
// a change and answers changed=false when none came.
func (c *Client) Fetch(ctx context.Context, revision string) (b Bindings, changed bool, err error) {
	req, err := c.request(ctx, http.MethodGet, SecretsPath, nil)
	if err != nil {
		return Bindings{}, false, err
	}
	if revision != "" {
		req.Header.Set("If-None-Match", `"`+revision+`"`)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Bindings{}, false, fmt.Errorf("reading the bound webhook secrets from the bridge: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified:
		return Bindings{}, false, nil
	case http.StatusOK:
		if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&b); err != nil {
			return Bindings{}, false, fmt.Errorf("reading the bound webhook secrets from the bridge: %w", err)
		}
		return b, true, nil
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	return Bindings{}, false, fmt.Errorf("the bridge answered the bound webhook secrets %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
}

// Watch calls update with the bound secrets, then with each change, until ctx
// ends. It retries a failed read after a pause that grows to 10 s.
func (c *Client) Watch(ctx context.Context, log *slog.Logger, update func(Bindings)) {
	revision := ""
	pause := 200 * time.Millisecond
	failing := false
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, defaultLongPoll+15*time.Second)
		b, changed, err := c.Fetch(pctx, revision)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			if !failing {
				log.Error("the bound webhook secrets cannot be read from the bridge; retrying", "error", err)
			}
			failing = true
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
			pause = min(2*pause, 10*time.Second)
			continue
		case changed:
			update(b)
			revision = b.Revision
		}
		if failing && err == nil {
			log.Info("the bound webhook secrets are read from the bridge again")
		}
		failing, pause = false, 200*time.Millisecond
	}
}
