package emucore

import (
	"strings"
	"sync"
	"sync/atomic"
)

// Failure is an injected failure: the status to answer with and the Retry-After
// seconds to announce. How it looks on the wire (rate-limit headers, body) is the
// forge's.
type Failure struct {
	Status     int
	RetryAfter int
	// Scope limits a queued failure to request paths containing it ("": any).
	Scope string
	// WritesOnly limits it to write requests (a refused create, while the reads of
	// the same path go through).
	WritesOnly bool
}

// Faults are the failures a test arms on an emulator's API, and the count of its
// write requests that FailWrite aims at.
type Faults struct {
	mu     sync.Mutex
	queue  []Failure
	writes int
	// failWriteAt is the write count at which a write fails (0: none).
	failWriteAt, failWriteStatus int
}

// FailNext queues n failures with status and retryAfter for the next requests
// whose path contains scope ("": any request), one request each.
func (f *Faults) FailNext(scope string, n, status, retryAfter int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.queue = append(f.queue, Failure{Status: status, RetryAfter: retryAfter, Scope: scope})
	}
}

// FailNextWrite queues n failures with status for the next write requests whose
// path contains scope ("": any write), one request each; reads pass.
func (f *Faults) FailNextWrite(scope string, n, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.queue = append(f.queue, Failure{Status: status, Scope: scope, WritesOnly: true})
	}
}

// FailWrite lets `after` more write requests through, then fails the next write
// with status (a crash or outage in the middle of a multi-step change).
func (f *Faults) FailWrite(after, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failWriteAt, f.failWriteStatus = f.writes+after+1, status
}

// Admit is the fault check of one authenticated API request, in the order both
// forges apply it: a write is counted and fails when FailWrite aimed at it;
// then the first queued failure whose scope is in path is taken. It returns the
// failure to answer with, or false to go on.
func (f *Faults) Admit(write bool, path string) (Failure, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if write {
		f.writes++
		if f.writes == f.failWriteAt {
			f.failWriteAt = 0
			return Failure{Status: f.failWriteStatus}, true
		}
	}
	for i, fl := range f.queue {
		if fl.WritesOnly && !write {
			continue
		}
		if fl.Scope == "" || strings.Contains(path, fl.Scope) {
			f.queue = append(f.queue[:i], f.queue[i+1:]...)
			return fl, true
		}
	}
	return Failure{}, false
}

// CountWrite counts a write that does not go through Admit (one authenticated
// another way); FailWrite does not aim at it.
func (f *Faults) CountWrite() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
}

// Writes is how many write requests were counted.
func (f *Faults) Writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// OneShot is a function a test arms to run once, when a request of one kind next
// arrives, before it is handled (a person pushing while a client is mid-update):
// a race a test replays exactly.
type OneShot struct {
	mu sync.Mutex
	fn func()
}

// Arm makes Fire run fn, once; it replaces what was armed.
func (o *OneShot) Arm(fn func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fn = fn
}

// Fire runs and disarms the armed function, if any. Call it without the
// emulator's lock: the function may well call the emulator.
func (o *OneShot) Fire() {
	o.mu.Lock()
	fn := o.fn
	o.fn = nil
	o.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// Counter counts something an emulator served (blob contents read), for tests
// that bound a client's traffic.
type Counter struct{ n atomic.Int64 }

// Inc counts one.
func (c *Counter) Inc() { c.n.Add(1) }

// Value is the count so far.
func (c *Counter) Value() int { return int(c.n.Load()) }
