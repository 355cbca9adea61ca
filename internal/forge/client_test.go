package forge_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nudgeflow/nudgeflow/internal/forge"
)

func TestHTTPClientAuthorizesCountsWritesAndBoundsRequests(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.Header.Get("Authorization"))
	}))
	defer srv.Close()

	o := forge.ClientOptions{Token: "s3cret"}
	hc, tr, err := forge.HTTPClient(o, 7*time.Second, func(r *http.Request) { r.Header.Set("Authorization", "token "+o.Token) })
	if err != nil {
		t.Fatal(err)
	}
	if hc.Timeout != 7*time.Second {
		t.Fatalf("timeout %v, want the default", hc.Timeout)
	}
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPatch} {
		req, _ := http.NewRequest(m, srv.URL, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if req.Header.Get("Authorization") != "" {
			t.Fatal("the caller's request was modified")
		}
	}
	if strings.Join(seen, ",") != "GET token s3cret,HEAD token s3cret,POST token s3cret,PATCH token s3cret" || tr.Writes() != 2 {
		t.Fatalf("requests %q, writes %d", seen, tr.Writes())
	}

	// GitLab's library sets its own header: nothing to authorize, a set timeout kept.
	hc, _, err = forge.HTTPClient(forge.ClientOptions{Token: "s3cret", Timeout: time.Second}, 7*time.Second, nil)
	if err != nil || hc.Timeout != time.Second {
		t.Fatalf("timeout %v, %v", hc.Timeout, err)
	}

	if _, _, err := forge.HTTPClient(forge.ClientOptions{}, time.Second, nil); !errors.Is(err, forge.ErrNoToken) {
		t.Fatalf("no token: %v", err)
	}
}
