package emucore

import "testing"

func TestCICounts(t *testing.T) {
	var ci CI
	if ci.Events() != nil || ci.ForRepo("o/r") != 0 {
		t.Fatal("a new CI has runs")
	}
	ci.Record(CIEvent{Repo: "o/r", Number: 1, Action: "opened", HeadSHA: "a"})
	ci.Record(CIEvent{Repo: "o/r", Number: 1, Action: "synchronize", HeadSHA: "b"})
	ci.Record(CIEvent{Repo: "o/r", Number: 2, Action: "opened", HeadSHA: "c"})
	ci.Record(CIEvent{Repo: "o/other", Number: 1, Action: "opened", HeadSHA: "d"})
	if n := ci.ForRepo("o/r"); n != 3 {
		t.Fatalf("ForRepo %d", n)
	}
	if n := ci.ForRequest("o/r", 1); n != 2 {
		t.Fatalf("ForRequest %d", n)
	}
	if !ci.RanFor("o/r", "b") || ci.RanFor("o/r", "d") {
		t.Fatal("RanFor mixes repositories up")
	}
	events := ci.Events()
	events[0].Action = "changed"
	if ci.Events()[0].Action != "opened" {
		t.Fatal("Events shares its slice")
	}
	ci.Replace(events[:1])
	if got := ci.Events(); len(got) != 1 || got[0].Action != "changed" {
		t.Fatalf("after Replace: %v", got)
	}
}
