package emucore

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
)

// faultyServer answers like a forge would: the fault check on every request, the
// status it picked, and OK otherwise.
func faultyServer(t *testing.T, f *Faults, before *OneShot) *HTTP {
	h := Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		before.Fire()
		write := r.Method != http.MethodGet
		if fl, failed := f.Admit(write, r.URL.Path); failed {
			w.Header().Set("Retry-After", fmt.Sprint(fl.RetryAfter))
			w.WriteHeader(fl.Status)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(h.Close)
	return h
}

// status is the status and Retry-After a request got.
func status(t *testing.T, method, url string) (int, string) {
	t.Helper()
	r := call(t, method, url)
	return r.code, r.header.Get("Retry-After")
}

func TestFailNextIsScopedAndOneRequestEach(t *testing.T) {
	var f Faults
	var none OneShot
	h := faultyServer(t, &f, &none)
	f.FailNext("/repos/a/", 2, http.StatusTooManyRequests, 7)
	// Another owner's traffic is not hit.
	if code, _ := status(t, http.MethodGet, h.URL()+"/repos/b/x"); code != http.StatusOK {
		t.Fatalf("other scope: %d", code)
	}
	for range 2 {
		if code, ra := status(t, http.MethodGet, h.URL()+"/repos/a/x"); code != http.StatusTooManyRequests || ra != "7" {
			t.Fatalf("scoped failure: %d Retry-After %q", code, ra)
		}
	}
	if code, _ := status(t, http.MethodGet, h.URL()+"/repos/a/x"); code != http.StatusOK {
		t.Fatalf("after the queue ran out: %d", code)
	}
	f.FailNext("", 1, http.StatusBadGateway, 0)
	if code, _ := status(t, http.MethodGet, h.URL()+"/anything"); code != http.StatusBadGateway {
		t.Fatalf("unscoped failure: %d", code)
	}
}

func TestFailWriteCountsWrites(t *testing.T) {
	var f Faults
	var none OneShot
	h := faultyServer(t, &f, &none)
	f.FailWrite(1, http.StatusInternalServerError)
	codes := []int{}
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodPut, http.MethodDelete} {
		code, _ := status(t, m, h.URL()+"/w")
		codes = append(codes, code)
	}
	// The first write passes, reads do not count, the second write fails, then no more.
	if fmt.Sprint(codes) != "[200 200 500 200]" {
		t.Fatalf("codes %v", codes)
	}
	f.CountWrite()
	if f.Writes() != 4 {
		t.Fatalf("writes %d", f.Writes())
	}
}

func TestOneShotFiresOnce(t *testing.T) {
	var f Faults
	var before OneShot
	h := faultyServer(t, &f, &before)
	var mu sync.Mutex
	fired := 0
	before.Arm(func() { mu.Lock(); fired++; mu.Unlock() })
	for range 3 {
		status(t, http.MethodGet, h.URL())
	}
	mu.Lock()
	defer mu.Unlock()
	if fired != 1 {
		t.Fatalf("fired %d times", fired)
	}
}

func TestCounter(t *testing.T) {
	var c Counter
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(c.Inc)
	}
	wg.Wait()
	if c.Value() != 10 {
		t.Fatalf("count %d", c.Value())
	}
}

// FailNextWrite fails only writes of its scope: the reads of the same path pass
// (a client lists pull requests before it opens one) and keep the failure armed.
func TestFailNextWriteSparesReads(t *testing.T) {
	var f Faults
	var none OneShot
	h := faultyServer(t, &f, &none)
	f.FailNextWrite("/pulls", 1, http.StatusBadGateway)
	if code, _ := status(t, http.MethodGet, h.URL()+"/repos/a/x/pulls"); code != http.StatusOK {
		t.Fatalf("a read of the scope: %d", code)
	}
	if code, _ := status(t, http.MethodPost, h.URL()+"/repos/a/x/issues"); code != http.StatusOK {
		t.Fatalf("a write outside the scope: %d", code)
	}
	if code, _ := status(t, http.MethodPost, h.URL()+"/repos/a/x/pulls"); code != http.StatusBadGateway {
		t.Fatalf("the write of the scope: %d", code)
	}
	if code, _ := status(t, http.MethodPost, h.URL()+"/repos/a/x/pulls"); code != http.StatusOK {
		t.Fatalf("once: %d", code)
	}
}
