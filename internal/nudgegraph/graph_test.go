package nudgegraph

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func e(from, to string) Edge { return Edge{From: from, To: to} }

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		nudges []Edge
		want   []string // each problem's message, in order; nil means valid
	}{
		{name: "empty", nudges: nil},
		{name: "chain", nudges: []Edge{e("a", "b"), e("b", "c"), e("c", "d")}},
		{name: "diamond", nudges: []Edge{e("a", "b"), e("a", "c"), e("b", "d"), e("c", "d")}},
		{
			name:   "self nudge",
			nudges: []Edge{e("a", "b"), e("c", "c")},
			want:   []string{"component c cannot nudge itself (entry 1)"},
		},
		{
			name:   "duplicate pair names both entries",
			nudges: []Edge{e("x", "y"), e("x", "z"), e("a", "b"), e("q", "r"), e("x", "y")},
			want:   []string{"duplicate nudge x -> y at entries 0 and 4"},
		},
		{
			name: "triplicate names every entry, duplicates differing only in mode still count",
			nudges: []Edge{e("a", "b"), {From: "a", To: "b", Mode: "validated", GatingGroup: "g"},
				e("c", "d"), e("a", "b")},
			want: []string{"duplicate nudge a -> b at entries 0, 1 and 3"},
		},
		{
			name:   "two-cycle",
			nudges: []Edge{e("b", "a"), e("a", "b")},
			want:   []string{"cycle detected: a -> b -> a"},
		},
		{
			name:   "three-cycle reported from its smallest name, whatever the entry order",
			nudges: []Edge{e("c", "a"), e("b", "c"), e("a", "b")},
			want:   []string{"cycle detected: a -> b -> c -> a"},
		},
		{
			name:   "cycle beside an acyclic part",
			nudges: []Edge{e("root", "p"), e("p", "q"), e("q", "r"), e("r", "p"), e("root", "s")},
			want:   []string{"cycle detected: p -> q -> r -> p"},
		},
		{
			name:   "two separate cycles both reported",
			nudges: []Edge{e("x", "y"), e("y", "x"), e("a", "b"), e("b", "c"), e("c", "a")},
			want:   []string{"cycle detected: a -> b -> c -> a", "cycle detected: x -> y -> x"},
		},
		{
			name:   "shortest cycle, with the rest of the strongly connected set named",
			nudges: []Edge{e("a", "b"), e("b", "c"), e("c", "d"), e("d", "a"), e("b", "a")},
			want:   []string{"cycle detected: a -> b -> a (components a, b, c, d all nudge each other transitively)"},
		},
		{
			name:   "everything at once, in a stable order",
			nudges: []Edge{e("a", "b"), e("b", "a"), e("k", "k"), e("a", "b")},
			want: []string{
				"component k cannot nudge itself (entry 2)",
				"duplicate nudge a -> b at entries 0 and 3",
				"cycle detected: a -> b -> a",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.nudges)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			var gerr *Error
			require.ErrorAs(t, err, &gerr)
			var got []string
			for _, p := range gerr.Problems {
				got = append(got, p.Message)
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, "invalid nudge graph: "+strings.Join(tc.want, "; "), err.Error())
		})
	}
}

func TestCycleProblemPointsAtEntries(t *testing.T) {
	nudges := []Edge{e("c", "a"), e("x", "y"), e("b", "c"), e("a", "b")}
	problems := Check(nudges)
	require.Len(t, problems, 1)
	require.Equal(t, Cycle, problems[0].Kind)
	require.Equal(t, []string{"a", "b", "c", "a"}, problems[0].Path)
	require.Equal(t, []int{3, 2, 0}, problems[0].Entries, "a->b is entry 3, b->c entry 2, c->a entry 0")
}

func TestIndex(t *testing.T) {
	nudges := []Edge{e("a", "b"), e("a", "c"), e("b", "d"), {From: "a", To: "e", Mode: "validated", GatingGroup: "g"}}
	x := NewIndex(nudges)
	require.Equal(t, []string{"b", "c", "e"}, x.Targets("a"))
	require.Empty(t, x.Targets("d"))
	require.Equal(t, []Edge{e("b", "d")}, x.EdgesFrom("b"))
	require.True(t, x.Has("a", "e"))
	require.False(t, x.Has("e", "a"))
	require.Equal(t, []string{"a", "b", "c", "d", "e"}, components(nudges))
	exists := map[string]bool{"a": true, "b": true, "d": true}
	require.Equal(t, []string{"c", "e"}, Missing(nudges, func(n string) bool { return exists[n] }))
}

func TestAdded(t *testing.T) {
	prev := []Edge{e("a", "b"), e("a", "c")}
	next := []Edge{{From: "a", To: "b", Mode: "validated", GatingGroup: "g"}, e("c", "d"), e("a", "c"), e("b", "d")}
	require.Equal(t, []int{1, 3}, Added(prev, next), "a mode change is not an added edge")
	require.Equal(t, []int{0, 1}, Added(nil, prev))
}

// chainOfEdges is a valid graph of n edges in layers, like a large tenant: many
// components, each nudging a few of the next layer.
func layeredEdges(n int) []Edge {
	out := make([]Edge, 0, n)
	for i := 0; len(out) < n; i++ {
		for k := 1; k <= 5 && len(out) < n; k++ {
			out = append(out, e(fmt.Sprintf("component-%04d", i), fmt.Sprintf("component-%04d", i+k)))
		}
	}
	return out
}

func TestValidateLargeGraphs(t *testing.T) {
	edges := layeredEdges(5000)
	require.NoError(t, Validate(edges))
	// Closing the graph from the last component back to the first makes one big cycle.
	closed := append(edges, e("component-1004", "component-0000"))
	err := Validate(closed)
	require.ErrorContains(t, err, "cycle detected: component-0000 -> component-0004 -> component-0009 -> ")
	require.ErrorContains(t, err, "-> component-0999 -> component-1004 -> component-0000 (1001 components nudge each other transitively: "+
		"component-0000, component-0001, component-0002, component-0003, component-0004, component-0005, component-0006, "+
		"component-0007, component-0008, component-0009 and 991 more)")
}

func BenchmarkValidateNudgeGraph(b *testing.B) {
	edges := layeredEdges(5000)
	b.ReportAllocs()
	for b.Loop() {
		if err := Validate(edges); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateNudgeGraphWithCycle(b *testing.B) {
	edges := append(layeredEdges(4999), e("component-1000", "component-0000"))
	b.ReportAllocs()
	for b.Loop() {
		if err := Validate(edges); err == nil {
			b.Fatal("want a cycle")
		}
	}
}
