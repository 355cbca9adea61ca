package emucore

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// waitFor waits for cond, with a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, 5*time.Millisecond, "waiting for %s", what)
}

type received struct {
	event, token, contentType, body string
}

func TestWebhooksPostInOrderAndRecord(t *testing.T) {
	var mu sync.Mutex
	var got []received
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{r.Header.Get("X-Test-Event"), r.Header.Get("X-Test-Token"), r.Header.Get("Content-Type"), string(b)})
		mu.Unlock()
		if r.URL.Path == "/gone" {
			w.WriteHeader(http.StatusGone)
		}
	}))
	t.Cleanup(recv.Close)

	w := StartWebhooks()
	t.Cleanup(w.Close)
	w.Add(Hook{URL: recv.URL + "/a", Secret: "s1", Events: []string{"pr"}})
	w.Add(Hook{URL: recv.URL + "/gone", Secret: "s2", Events: []string{"pr", "push"}})
	if n := len(w.Subscribed("push")); n != 1 || len(w.All()) != 2 || len(w.Subscribed("none")) != 0 {
		t.Fatalf("subscriptions: push %d, all %d", n, len(w.All()))
	}
	for i, ev := range []string{"pr", "push"} {
		for _, h := range w.Subscribed(ev) {
			header := http.Header{}
			header.Set("X-Test-Event", ev)
			header.Set("X-Test-Token", h.Secret)
			w.Send(Post{ID: string(rune('1' + i)), URL: h.URL, Event: ev, Action: "act-" + ev, Header: header, Payload: []byte(`{"n":` + string(rune('1'+i)) + `}`)})
		}
	}
	// A receiver that is not there: the POST fails and is recorded with status 0.
	w.Send(Post{ID: "x", URL: "http://127.0.0.1:1/", Event: "pr", Payload: []byte(`{}`)})

	waitFor(t, "four deliveries", func() bool { return len(w.Deliveries()) == 4 })
	ds := w.Deliveries()
	want := []Delivery{
		{ID: "1", URL: recv.URL + "/a", Event: "pr", Action: "act-pr", Status: 200},
		{ID: "1", URL: recv.URL + "/gone", Event: "pr", Action: "act-pr", Status: 410},
		{ID: "2", URL: recv.URL + "/gone", Event: "push", Action: "act-push", Status: 410},
		{ID: "x", URL: "http://127.0.0.1:1/", Event: "pr", Status: 0},
	}
	for i := range want {
		if ds[i] != want[i] {
			t.Fatalf("delivery %d: %+v, want %+v", i, ds[i], want[i])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || got[0] != (received{"pr", "s1", "application/json", `{"n":1}`}) || got[2] != (received{"push", "s2", "application/json", `{"n":2}`}) {
		t.Fatalf("received %+v", got)
	}
}

func TestWebhooksCloseWaitsForTheSender(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	recv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		close(arrived)
		<-release
	}))
	defer recv.Close()
	w := StartWebhooks()
	w.Send(Post{ID: "1", URL: recv.URL, Event: "pr", Payload: []byte(`{}`)})
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the POST did not arrive")
	}
	closed := make(chan struct{})
	go func() {
		w.Close()
		close(closed)
	}()
	close(release)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return after the POST ended")
	}
	// Close waited for the POST in flight: its outcome is recorded.
	if ds := w.Deliveries(); len(ds) != 1 || ds[0].Status != http.StatusOK {
		t.Fatalf("deliveries %+v", ds)
	}
}
