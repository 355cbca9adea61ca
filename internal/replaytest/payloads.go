package replaytest

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/history/v1"
)

// Payload is one JSON payload a stored history carries. Where names it: "input"
// (the workflow's input), "continue-as-new" (the next run's input), "result" (the
// workflow's result), "signal <name>", "activity <type>" (an activity's input) or
// "activity-result <type>".
type Payload struct {
	Where string
	Data  []byte
}

// payloads are every JSON payload of h, in history order.
func payloads(h *history.History) []Payload {
	var out []Payload
	add := func(where string, ps *commonpb.Payloads) {
		for _, p := range ps.GetPayloads() {
			if string(p.GetMetadata()["encoding"]) == "json/plain" {
				out = append(out, Payload{Where: where, Data: p.GetData()})
			}
		}
	}
	activityType := map[int64]string{}
	for _, e := range h.GetEvents() {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			add("input", e.GetWorkflowExecutionStartedEventAttributes().GetInput())
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
			add("continue-as-new", e.GetWorkflowExecutionContinuedAsNewEventAttributes().GetInput())
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			add("result", e.GetWorkflowExecutionCompletedEventAttributes().GetResult())
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			a := e.GetWorkflowExecutionSignaledEventAttributes()
			add("signal "+a.GetSignalName(), a.GetInput())
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := e.GetActivityTaskScheduledEventAttributes()
			activityType[e.GetEventId()] = a.GetActivityType().GetName()
			add("activity "+a.GetActivityType().GetName(), a.GetInput())
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			a := e.GetActivityTaskCompletedEventAttributes()
			add("activity-result "+activityType[a.GetScheduledEventId()], a.GetResult())
		}
	}
	return out
}

// decodesWhole decodes data into a new value of v's type and says what the value
// drops: every field of data with a value that is not empty must come out of the
// value's own encoding, under the same name, with the same value. It proves that
// a type still reads what was stored under its earlier shape.
func decodesWhole(data []byte, v any) error {
	ptr := reflect.New(reflect.TypeOf(v))
	if err := json.Unmarshal(data, ptr.Interface()); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	again, err := json.Marshal(ptr.Interface())
	if err != nil {
		return fmt.Errorf("encoding again: %w", err)
	}
	var was, is any
	if err := json.Unmarshal(data, &was); err != nil {
		return err
	}
	if err := json.Unmarshal(again, &is); err != nil {
		return err
	}
	return kept("$", was, is)
}

func kept(path string, was, is any) error {
	switch w := was.(type) {
	case map[string]any:
		m, ok := is.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: was an object, is %v", path, is)
		}
		for k, v := range w {
			if empty(v) {
				continue
			}
			if err := kept(path+"."+k, v, m[k]); err != nil {
				return err
			}
		}
		return nil
	case []any:
		l, ok := is.([]any)
		if !ok || len(l) != len(w) {
			return fmt.Errorf("%s: was %d items, is %v", path, len(w), is)
		}
		for i := range w {
			if err := kept(fmt.Sprintf("%s[%d]", path, i), w[i], l[i]); err != nil {
				return err
			}
		}
		return nil
	default:
		if !reflect.DeepEqual(was, is) {
			return fmt.Errorf("%s: was %v, is %v", path, was, is)
		}
		return nil
	}
}

func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case float64:
		return x == 0
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// DecodeAllWhole checks, for every stored history in testdata, that each payload
// whose Where is a key of types decodes whole into that key's type (DecodesWhole),
// and fails when no payload was checked: a check of nothing proves nothing.
func DecodeAllWhole(t *testing.T, types map[string]any) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, file := range files {
		h, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range payloads(h) {
			v, ok := types[p.Where]
			if !ok {
				continue
			}
			seen[p.Where]++
			if err := decodesWhole(p.Data, v); err != nil {
				t.Errorf("%s: payload %d (%s) does not decode whole into %T: %v", filepath.Base(file), i, p.Where, v, err)
			}
		}
	}
	for where := range types {
		if seen[where] == 0 {
			t.Errorf("no stored payload %q: nothing proves its type reads them", where)
		}
	}
	t.Logf("payloads checked: %v", seen)
}
