package nudgegraph

import (
	"slices"
	"strings"
	"testing"
)

// FuzzValidate feeds arbitrary edge lists (a NudgeConfig is user input) and checks what
// must hold for any input: no panic, the same message twice, and an accepted graph
// really is a DAG without duplicates or self-nudges; a reported cycle really is one.
func FuzzValidate(f *testing.F) {
	f.Add("a>b,b>c,c>a")
	f.Add("a>b,a>b,b>b")
	f.Add("a>b,b>c,c>d,a>d")
	f.Add(">,,>x")
	f.Fuzz(func(t *testing.T, spec string) {
		var nudges []Edge
		for _, part := range strings.Split(spec, ",") {
			from, to, _ := strings.Cut(part, ">")
			nudges = append(nudges, Edge{From: from, To: to})
		}
		err := Validate(nudges)
		again := Validate(nudges)
		if (err == nil) != (again == nil) || (err != nil && err.Error() != again.Error()) {
			t.Fatalf("not deterministic: %v vs %v", err, again)
		}
		problems := Check(nudges)
		if len(problems) == 0 {
			assertDAG(t, nudges)
			return
		}
		for _, p := range problems {
			switch p.Kind {
			case Cycle:
				if len(p.Path) < 3 || p.Path[0] != p.Path[len(p.Path)-1] || len(p.Entries) != len(p.Path)-1 {
					t.Fatalf("malformed cycle %v entries %v", p.Path, p.Entries)
				}
				for i, entry := range p.Entries {
					if nudges[entry].From != p.Path[i] || nudges[entry].To != p.Path[i+1] {
						t.Fatalf("cycle step %d %v does not match entry %d %+v", i, p.Path, entry, nudges[entry])
					}
				}
			case duplicate:
				for _, entry := range p.Entries[1:] {
					if nudges[entry] != nudges[p.Entries[0]] {
						t.Fatalf("entries %v are not duplicates", p.Entries)
					}
				}
			case selfNudge:
				if n := nudges[p.Entries[0]]; n.From != n.To {
					t.Fatalf("entry %d is no self-nudge", p.Entries[0])
				}
			}
		}
	})
}

// assertDAG checks by Kahn's algorithm, independently of the code under test.
func assertDAG(t *testing.T, nudges []Edge) {
	t.Helper()
	seen := map[[2]string]bool{}
	indeg := map[string]int{}
	out := map[string][]string{}
	for _, n := range nudges {
		k := [2]string{n.From, n.To}
		if n.From == n.To || seen[k] {
			t.Fatalf("accepted a self-nudge or duplicate: %+v", n)
		}
		seen[k] = true
		indeg[n.To]++
		indeg[n.From] += 0
		out[n.From] = append(out[n.From], n.To)
	}
	var ready []string
	for v, d := range indeg {
		if d == 0 {
			ready = append(ready, v)
		}
	}
	done := 0
	for len(ready) > 0 {
		v := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		done++
		for _, w := range out[v] {
			if indeg[w]--; indeg[w] == 0 {
				ready = append(ready, w)
			}
		}
	}
	if done != len(indeg) {
		keys := make([]string, 0)
		for k := range indeg {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		t.Fatalf("accepted a graph with a cycle among %v", keys)
	}
}
