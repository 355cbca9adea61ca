package forge

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
)

// RateLimitHeaders name the headers, besides Retry-After, that a forge's rate
// limiter (or the proxy in front of it) sends: GitLab's RateLimit-*, the
// GitHub-compatible X-RateLimit-* of Forgejo's proxies.
type RateLimitHeaders struct{ Remaining, Reset string }

// StatusError turns a forge's HTTP failure into a Temporal error whose message is
// text (the operation, the status and the server's message, never a request header):
//   - 429, and 403 with Retry-After or Remaining 0, are retryable, typed
//     "<name>RateLimit", with NextRetryDelay from Retry-After, else Reset, else a minute;
//   - 401 is retryable, typed "Unauthorized", text followed by hint (a rotated token;
//     the workflow bounds it);
//   - 5xx are retryable and other 4xx non-retryable, typed "<name><status>".
func StatusError(name, text string, status int, h http.Header, rl RateLimitHeaders, hint string) error {
	if delay, limited := RateLimitDelay(status, h, rl); limited {
		return temporal.NewApplicationErrorWithOptions(text, name+"RateLimit", temporal.ApplicationErrorOptions{NextRetryDelay: delay})
	}
	typ := name + strconv.Itoa(status)
	if status >= 500 {
		return temporal.NewApplicationError(text, typ)
	}
	if status == http.StatusUnauthorized {
		return temporal.NewApplicationError(text+" "+hint, "Unauthorized")
	}
	return temporal.NewNonRetryableApplicationError(text, typ, nil)
}

// RateLimitDelay reports whether an answer is a rate limit and how long to wait:
// Retry-After in seconds or as an HTTP date, else the Reset header's Unix time,
// else a minute.
func RateLimitDelay(status int, h http.Header, rl RateLimitHeaders) (time.Duration, bool) {
	limited := status == http.StatusTooManyRequests ||
		(status == http.StatusForbidden && (h.Get("Retry-After") != "" || h.Get(rl.Remaining) == "0"))
	if !limited {
		return 0, false
	}
	if s, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After"))); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(h.Get("Retry-After")); err == nil {
		if d := time.Until(t); d > 0 {
			return d.Round(time.Second) + time.Second, true
		}
	}
	if r, err := strconv.ParseInt(h.Get(rl.Reset), 10, 64); err == nil {
		if d := time.Until(time.Unix(r, 0)); d > 0 {
			return d.Round(time.Second) + time.Second, true
		}
	}
	return time.Minute, true
}

// Truncate bounds a server's message in an error (300 bytes).
func Truncate(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
