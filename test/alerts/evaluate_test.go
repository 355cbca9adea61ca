package alerts_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/template"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
	"github.com/stretchr/testify/require"
)

// Prometheus's engine evaluates the expressions; the series it reads live in
// memory (seriesStore), and the pending/firing state of each alert is Prometheus's
// rule (alertState). Prometheus's own rules and promqltest packages would bring its
// whole remote-write and service-discovery tree (cloud SDKs) into nudgeflow's module
// graph; these few lines do not.

// evaluation step: a rule group's usual interval.
const evalInterval = 30 * time.Second

// firingAt evaluates rule every evalInterval from t=0 to at over the series (a
// promqltest-style block: one `metric{labels} values` line each, a sample a minute
// from t=0) and returns the labels of the alerts firing at `at`, their annotations
// expanded as Prometheus would (an expansion error fails the test).
func firingAt(t *testing.T, engine *promql.Engine, rule rulefmt.Rule, series string, at time.Duration) []map[string]string {
	t.Helper()
	store := loadSeries(t, series)
	query := func(ctx context.Context, q string, ts time.Time) (promql.Vector, error) {
		qry, err := engine.NewInstantQuery(ctx, store, nil, q, ts)
		if err != nil {
			return nil, err
		}
		defer qry.Close()
		res := qry.Exec(ctx)
		if res.Err != nil {
			return nil, res.Err
		}
		switch v := res.Value.(type) {
		case promql.Vector:
			return v, nil
		case promql.Scalar:
			return promql.Vector{{T: v.T, F: v.V}}, nil
		default:
			return nil, fmt.Errorf("rule %s: expression gives a %s, not a vector", rule.Alert, res.Value.Type())
		}
	}
	require.Zero(t, rule.KeepFiringFor, "the harness models `for` only")

	state := alertState{hold: time.Duration(rule.For), since: map[uint64]time.Time{}}
	start := time.Unix(0, 0).UTC()
	var last promql.Vector
	var end time.Time
	for ts := start; !ts.After(start.Add(at)); ts = ts.Add(evalInterval) {
		vec, err := query(context.Background(), rule.Expr, ts)
		require.NoError(t, err, "%s at %s", rule.Alert, ts.Sub(start))
		state.observe(alertLabels(rule, vec), ts)
		last, end = vec, ts
	}
	var firing []map[string]string
	for _, s := range last {
		lbls := alertLabel(rule, s.Metric)
		if !state.firing(lbls, end) {
			continue
		}
		firing = append(firing, lbls.Map())
		for name, text := range rule.Annotations {
			expanded := expand(t, rule, name, text, s, end, query)
			require.NotContains(t, expanded, "<no value>", "%s's %s expands every field", rule.Alert, name)
		}
	}
	return firing
}

// alertState is Prometheus's rule for `for`: a label set is pending from the first
// evaluation whose result holds it, fires once it has been in every result for
// `for`, and starts over after an evaluation without it.
type alertState struct {
	hold  time.Duration
	since map[uint64]time.Time
}

func (s *alertState) observe(active []labels.Labels, ts time.Time) {
	seen := map[uint64]bool{}
	for _, l := range active {
		h := l.Hash()
		seen[h] = true
		if _, ok := s.since[h]; !ok {
			s.since[h] = ts
		}
	}
	for h := range s.since {
		if !seen[h] {
			delete(s.since, h)
		}
	}
}

func (s *alertState) firing(l labels.Labels, ts time.Time) bool {
	since, ok := s.since[l.Hash()]
	return ok && ts.Sub(since) >= s.hold
}

// alertLabel is an alert's identity as Prometheus builds it: the sample's labels
// without the metric name, the rule's labels, alertname.
func alertLabel(rule rulefmt.Rule, metric labels.Labels) labels.Labels {
	b := labels.NewBuilder(metric)
	b.Del(labels.MetricName)
	for k, v := range rule.Labels {
		b.Set(k, v)
	}
	b.Set(labels.AlertName, rule.Alert)
	return b.Labels()
}

func alertLabels(rule rulefmt.Rule, vec promql.Vector) []labels.Labels {
	out := make([]labels.Labels, 0, len(vec))
	for _, s := range vec {
		out = append(out, alertLabel(rule, s.Metric))
	}
	return out
}

// expand expands an annotation with the variables Prometheus gives alert templates.
func expand(t *testing.T, rule rulefmt.Rule, name, text string, s promql.Sample, ts time.Time, query template.QueryFunc) string {
	t.Helper()
	defs := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	data := template.AlertTemplateData(s.Metric.Map(), nil, "", s)
	out, err := template.NewTemplateExpander(context.Background(), defs+text, "__alert_"+rule.Alert, data,
		model.TimeFromUnixNano(ts.UnixNano()), query, nil, nil).Expand()
	require.NoError(t, err, "%s's %s expands", rule.Alert, name)
	return out
}

// loadSeries reads a series block: one `metric{labels} values` line each, in the
// notation of Prometheus's rule tests (`0+1x30`, `_x5`), a sample a minute from t=0.
func loadSeries(t *testing.T, block string) seriesStore {
	t.Helper()
	var store seriesStore
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		lbls, values, err := parser.ParseSeriesDesc(line)
		require.NoError(t, err, "series %q", line)
		var samples []chunks.Sample
		for i, v := range values {
			if !v.Omitted {
				samples = append(samples, floatSample{t: (time.Duration(i) * time.Minute).Milliseconds(), f: v.Value})
			}
		}
		store = append(store, storage.NewListSeries(lbls, samples))
	}
	require.NotEmpty(t, store)
	return store
}

// seriesStore is an in-memory storage.Queryable of a few series.
type seriesStore []storage.Series

func (s seriesStore) Querier(int64, int64) (storage.Querier, error) { return s, nil }

func (s seriesStore) Select(_ context.Context, _ bool, _ *storage.SelectHints, matchers ...*labels.Matcher) storage.SeriesSet {
	out := &seriesSet{}
	for _, series := range s {
		if matchesAll(series.Labels(), matchers) {
			out.series = append(out.series, series)
		}
	}
	// Sorted as a Prometheus storage returns them.
	slices.SortFunc(out.series, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
	return out
}

func matchesAll(l labels.Labels, matchers []*labels.Matcher) bool {
	for _, m := range matchers {
		if !m.Matches(l.Get(m.Name)) {
			return false
		}
	}
	return true
}

func (s seriesStore) LabelValues(context.Context, string, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (s seriesStore) LabelNames(context.Context, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (s seriesStore) Close() error { return nil }

// seriesSet iterates a selection.
type seriesSet struct {
	series []storage.Series
	next   int
}

func (s *seriesSet) Next() bool {
	s.next++
	return s.next <= len(s.series)
}

func (s *seriesSet) At() storage.Series                { return s.series[s.next-1] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }

// floatSample is one float sample of a synthetic series.
type floatSample struct {
	t int64
	f float64
}

func (s floatSample) T() int64                      { return s.t }
func (s floatSample) F() float64                    { return s.f }
func (s floatSample) H() *histogram.Histogram       { return nil }
func (s floatSample) FH() *histogram.FloatHistogram { return nil }
func (s floatSample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s floatSample) Copy() chunks.Sample           { return s }
