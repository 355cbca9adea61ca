package metrics

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// readForScrape calls the reader p holds (the bridge's: it reads its informer
// cache) for one scrape. ok is false when no reader is set (the worker) or when the
// read fails: an invalid metric would fail the whole scrape (the cache starts after
// the metrics server), so a failed read leaves its gauges out of this one.
func readForScrape[T any, F ~func(context.Context) (T, error)](p *atomic.Pointer[F], what string) (v T, ok bool) {
	read := p.Load()
	if read == nil {
		return v, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := (*read)(ctx)
	if err != nil {
		slog.Debug(what+" not read from the cache", "error", err)
		return v, false
	}
	return v, true
}
