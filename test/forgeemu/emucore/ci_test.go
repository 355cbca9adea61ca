package emucore

import "testing"

// event is a forge's own CI event shape.
type event struct {
	Project string
	IID     int
	Action  string
	SHA     string
}

func TestCICounts(t *testing.T) {
	ci := NewCI(func(e event) Run { return Run{Repo: e.Project, Number: e.IID, HeadSHA: e.SHA} })
	if ci.Events() != nil || ci.ForRepo("o/r") != 0 {
		t.Fatal("a new CI has runs")
	}
	ci.Record(event{"o/r", 1, "opened", "a"})
	ci.Record(event{"o/r", 1, "synchronize", "b"})
	ci.Record(event{"o/r", 2, "opened", "c"})
	ci.Record(event{"o/other", 1, "opened", "d"})
	if n := ci.ForRepo("o/r"); n != 3 {
		t.Fatalf("ForRepo %d", n)
	}
	if n := ci.ForRequest("o/r", 1); n != 2 {
		t.Fatalf("ForRequest %d", n)
	}
	if !ci.RanFor("o/r", "b") || ci.RanFor("o/r", "d") {
		t.Fatal("RanFor mixes repositories up")
	}
	if n := ci.Count(func(e event) bool { return e.Action == "opened" }); n != 3 {
		t.Fatalf("Count %d", n)
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
