package cli

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	sdklog "go.temporal.io/sdk/log"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Logging is configured here and nowhere else: one slog handler, chosen by
// --log-format and --log-level, behind nudgeflow's own slog lines (the default
// logger), controller-runtime's logger, client-go's klog (leader election, the
// informers) and the Temporal SDK's logger. Every line of a process is then one
// format at one level, which a log collector parses without per-source rules.

// Log formats. The long-running processes (bridge, worker, receiver) log JSON by default,
// for a log collector; the commands a person runs at a terminal log text.
const (
	logFormatJSON = "json"
	logFormatText = "text"
)

// jsonByDefault are the commands whose logs a collector reads.
var jsonByDefault = map[string]bool{"bridge": true, "worker": true, "receiver": true}

// ownControllerLogs marks a command that routes controller-runtime's logs itself
// (dev and bench write the in-process bridge's to a file): controller-runtime
// takes its logger once per process, so apply must leave it to them.
const ownControllerLogs = "nudgeflow.konflux-ci.dev/own-controller-logs"

type logFlags struct {
	format string
	level  string
}

func addLogFlags(fs *pflag.FlagSet) *logFlags {
	f := &logFlags{}
	fs.StringVar(&f.format, "log-format", "", "format of the logs on stderr: json or text (default json for bridge, worker and receiver, text for the other commands)")
	fs.StringVar(&f.level, "log-level", "info", "least severe log lines written: debug, info, warn or error")
	return f
}

// apply installs the handler for cmd as every logger's.
func (f *logFlags) apply(cmd *cobra.Command, w io.Writer) error {
	h, err := f.handler(cmd.Name(), w)
	if err != nil {
		return err
	}
	logger := slog.New(h)
	slog.SetDefault(logger)
	klog.SetSlogLogger(logger)
	if cmd.Annotations[ownControllerLogs] == "" {
		ctrl.SetLogger(logr.FromSlogHandler(h))
	}
	return nil
}

func (f *logFlags) handler(command string, w io.Writer) (slog.Handler, error) {
	level, err := parseLogLevel(f.level)
	if err != nil {
		return nil, err
	}
	format := f.format
	if format == "" {
		format = logFormatText
		if jsonByDefault[command] {
			format = logFormatJSON
		}
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: redactSecrets}
	switch format {
	case logFormatJSON:
		return slog.NewJSONHandler(w, opts), nil
	case logFormatText:
		return slog.NewTextHandler(w, opts), nil
	}
	return nil, fmt.Errorf("--log-format=%q: want %s or %s", f.format, logFormatJSON, logFormatText)
}

func parseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("--log-level=%q: want debug, info, warn or error", s)
}

// secretKeySuffixes end the names of attributes whose values are credentials
// ("token", "forgeToken", "webhookSecret", "Authorization", "api_key"). nudgeflow
// never logs one on purpose; this catches a library, or a future line, that does.
// Booleans that say whether a credential is set ("apiKey": true) are kept, and so
// are names that merely contain one ("secretsNamespace").
var secretKeySuffixes = []string{"token", "password", "secret", "authorization", "apikey"}

func redactSecrets(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindString && a.Value.Kind() != slog.KindAny {
		return a
	}
	key := strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(a.Key))
	for _, s := range secretKeySuffixes {
		if strings.HasSuffix(key, s) {
			return slog.String(a.Key, "REDACTED")
		}
	}
	return a
}

// temporalLogger is the Temporal SDK's logger: the process's handler (set by
// apply), its lines marked as the SDK's.
func temporalLogger() sdklog.Logger {
	return sdklog.NewStructuredLogger(slog.Default().With("logger", "temporal-sdk"))
}
