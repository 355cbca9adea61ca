package nudgegraph

import (
	"slices"
)

type pair struct{ from, to string }

// Index answers the questions the bridge, the migration and the export ask of a set
// of edges. It keeps the caller's slice; do not change it while the Index is in use.
type Index struct {
	nudges   []Edge
	bySource map[string][]int
	pairs    map[pair]int
}

// NewIndex indexes nudges by source and by (from, to) pair; the first of duplicate
// entries wins, as it does for cycle detection.
func NewIndex(nudges []Edge) *Index {
	x := &Index{nudges: nudges, bySource: map[string][]int{}, pairs: make(map[pair]int, len(nudges))}
	for i, e := range nudges {
		p := pair{e.From, e.To}
		if _, dup := x.pairs[p]; dup {
			continue
		}
		x.pairs[p] = i
		x.bySource[e.From] = append(x.bySource[e.From], i)
	}
	return x
}

// EdgesFrom are the edges whose builds of from nudge others, in entry order.
func (x *Index) EdgesFrom(from string) []Edge {
	idx := x.bySource[from]
	out := make([]Edge, len(idx))
	for i, j := range idx {
		out[i] = x.nudges[j]
	}
	return out
}

// Targets are the components a build of from nudges, in entry order.
func (x *Index) Targets(from string) []string {
	idx := x.bySource[from]
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = x.nudges[j].To
	}
	return out
}

// Has reports whether the edge from -> to is present.
func (x *Index) Has(from, to string) bool {
	_, ok := x.pairs[pair{from, to}]
	return ok
}

// components are every component named by an edge, sorted.
func components(nudges []Edge) []string {
	seen := make(map[string]struct{}, len(nudges))
	for _, e := range nudges {
		seen[e.From] = struct{}{}
		seen[e.To] = struct{}{}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Missing are the components named by nudges that exists rejects, sorted.
func Missing(nudges []Edge, exists func(name string) bool) []string {
	var out []string
	for _, n := range components(nudges) {
		if !exists(n) {
			out = append(out, n)
		}
	}
	return out
}

// Added are the indexes of the entries of next whose (from, to) pair is not in prev:
// what an update introduces. Changing only an entry's mode does not add it.
func Added(prev, next []Edge) []int {
	old := NewIndex(prev)
	var out []int
	for i, e := range next {
		if !old.Has(e.From, e.To) {
			out = append(out, i)
		}
	}
	return out
}
