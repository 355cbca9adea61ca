package replaytest

import (
	"strings"
	"testing"
)

// decodesWhole has teeth: a field the type no longer reads, or reads under
// another name, is named; empty stored fields and new fields are no loss.
func TestDecodesWholeNamesWhatIsDropped(t *testing.T) {
	type flat struct {
		Digest  string `json:"digest"`
		Pull    string `json:"pullSpec,omitempty"`
		Renamed string `json:"new,omitempty"`
	}
	stored := []byte(`{"digest":"sha256:1","pullSpec":"q/a@sha256:1","new":"","gone":"x"}`)
	err := decodesWhole(stored, flat{})
	if err == nil || !strings.Contains(err.Error(), "$.gone") {
		t.Fatalf("a dropped field must be named, got %v", err)
	}
	if err := decodesWhole([]byte(`{"digest":"sha256:1","new":""}`), flat{}); err != nil {
		t.Fatalf("nothing was dropped: %v", err)
	}
	type embedded struct {
		Inner struct {
			Digest string `json:"digest"`
		} `json:"inner"`
	}
	if err := decodesWhole([]byte(`{"digest":"sha256:1"}`), embedded{}); err == nil {
		t.Fatal("a field moved under another name must be named")
	}
}
