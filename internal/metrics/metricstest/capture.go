// Package metricstest captures what code records on a Temporal SDK metrics handler,
// for unit tests of workflows and activities.
package metricstest

import (
	"maps"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
)

// Capture is a client.MetricsHandler that keeps every counter increment with its
// name and tags.
type Capture struct {
	tags map[string]string
	rec  *record
}

type record struct {
	mu  sync.Mutex
	inc []increment
}

type increment struct {
	name string
	tags map[string]string
	n    int64
}

// New returns an empty capture.
func New() *Capture { return &Capture{rec: &record{}} }

// Total sums the counter name over the increments whose tags include the given
// key, value pairs.
func (c *Capture) Total(name string, tags ...string) int64 {
	c.rec.mu.Lock()
	defer c.rec.mu.Unlock()
	var sum int64
	for _, in := range c.rec.inc {
		if in.name != name {
			continue
		}
		match := true
		for i := 0; i+1 < len(tags); i += 2 {
			if in.tags[tags[i]] != tags[i+1] {
				match = false
			}
		}
		if match {
			sum += in.n
		}
	}
	return sum
}

// WithTags implements client.MetricsHandler.
func (c *Capture) WithTags(tags map[string]string) client.MetricsHandler {
	merged := map[string]string{}
	maps.Copy(merged, c.tags)
	maps.Copy(merged, tags)
	return &Capture{tags: merged, rec: c.rec}
}

// Counter implements client.MetricsHandler.
func (c *Capture) Counter(name string) client.MetricsCounter {
	return counterFunc(func(n int64) {
		c.rec.mu.Lock()
		defer c.rec.mu.Unlock()
		c.rec.inc = append(c.rec.inc, increment{name: name, tags: c.tags, n: n})
	})
}

// Gauge implements client.MetricsHandler (gauges are not kept).
func (c *Capture) Gauge(string) client.MetricsGauge { return nop{} }

// Timer implements client.MetricsHandler (timers are not kept).
func (c *Capture) Timer(string) client.MetricsTimer { return nop{} }

type counterFunc func(int64)

func (f counterFunc) Inc(n int64) { f(n) }

type nop struct{}

func (nop) Update(float64)       {}
func (nop) Record(time.Duration) {}
