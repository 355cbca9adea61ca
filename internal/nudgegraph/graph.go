// Package nudgegraph checks and queries the nudge edges of a namespace (ADR 67). It is
// pure: the admission webhook, the migration and the graph export share it, so a graph
// the migration writes is judged by exactly the rules the webhook enforces.
//
// Validation is linear in the edges (plus sorting the component names, which makes every
// message independent of map order): integration-service's CEL duplicate rule was
// O(n²) and forced a cap of 256 edges (360 since IS 2db9714); here 5000 edges cost well under a millisecond.
package nudgegraph

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	konfluxv1alpha1 "github.com/nudgeflow/nudgeflow/api/konflux/v1alpha1"
)

// Edge is one nudge relationship as stored in a NudgeConfig.
type Edge = konfluxv1alpha1.NudgeRelationship

// Kind names what is wrong with a set of edges.
type Kind string

const (
	// selfNudge is an edge whose source and target are the same component.
	selfNudge Kind = "SelfNudge"
	// duplicate is a (from, to) pair that appears in more than one entry.
	duplicate Kind = "Duplicate"
	// Cycle is a closed path of nudges: builds would nudge each other forever.
	Cycle Kind = "Cycle"
)

// Problem is one violation, with the entries (indexes into the validated slice) that
// cause it so callers can point at spec.nudges[i].
type Problem struct {
	Kind Kind
	// Entries are the offending indexes, ascending for duplicates, in path order for cycles.
	Entries []int
	// Path is the cycle, first component repeated at the end; empty for other kinds.
	Path    []string
	Message string
}

// Error carries every problem of a graph, in a stable order: self-nudges, duplicates
// (by first entry), then cycles (by smallest component name).
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Message
	}
	return "invalid nudge graph: " + strings.Join(msgs, "; ")
}

// Validate returns nil or an *Error naming every self-nudge, duplicate pair and cycle.
// The same input always yields the same message.
func Validate(nudges []Edge) error {
	problems := Check(nudges)
	if len(problems) == 0 {
		return nil
	}
	return &Error{Problems: problems}
}

// Check is Validate returning the problems themselves.
func Check(nudges []Edge) []Problem {
	var problems []Problem
	g := build(nudges)
	for _, i := range g.selfLoops {
		problems = append(problems, Problem{
			Kind:    selfNudge,
			Entries: []int{i},
			Message: fmt.Sprintf("component %s cannot nudge itself (entry %d)", nudges[i].From, i),
		})
	}
	for _, entries := range g.duplicates {
		e := nudges[entries[0]]
		problems = append(problems, Problem{
			Kind:    duplicate,
			Entries: entries,
			Message: fmt.Sprintf("duplicate nudge %s -> %s at entries %s", e.From, e.To, joinInts(entries)),
		})
	}
	return append(problems, g.cycles(nudges)...)
}

// graph is the edge set in compressed adjacency form over component indexes; the
// indexes follow sorted names so traversal order, and thus every message, does not
// depend on the order of the entries.
type graph struct {
	names []string
	// adj[start[v]:start[v+1]] are v's distinct targets, ascending, each with the
	// first entry that holds the edge.
	start      []int
	adj        []arc
	selfLoops  []int
	duplicates [][]int
}

type arc struct{ to, entry int }

func build(nudges []Edge) *graph {
	// Intern each name once (two string lookups per edge), then renumber by sorted name;
	// everything after works on integers.
	seen := make(map[string]int, len(nudges)/2+1)
	var byArrival []string
	ends := make([]int, 2*len(nudges))
	intern := func(name string) int {
		id, ok := seen[name]
		if !ok {
			id = len(byArrival)
			seen[name] = id
			byArrival = append(byArrival, name)
		}
		return id
	}
	for i, e := range nudges {
		ends[2*i], ends[2*i+1] = intern(e.From), intern(e.To)
	}
	order := make([]int, len(byArrival))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(byArrival[a], byArrival[b]) })
	names := make([]string, len(order))
	rank := make([]int, len(order))
	for r, id := range order {
		names[r], rank[id] = byArrival[id], r
	}
	for i := range ends {
		ends[i] = rank[ends[i]]
	}

	g := &graph{names: names, start: make([]int, len(names)+1)}
	firstOf := make(map[uint64]int, len(nudges))
	dupIndex := map[uint64]int{}
	kept := make([]int, 0, len(nudges))
	for i := range nudges {
		from, to := ends[2*i], ends[2*i+1]
		if from == to {
			g.selfLoops = append(g.selfLoops, i)
			continue
		}
		p := uint64(from)<<32 | uint64(to)
		first, dup := firstOf[p]
		if !dup {
			firstOf[p] = i
			kept = append(kept, i)
			g.start[from+1]++
			continue
		}
		if d, ok := dupIndex[p]; ok {
			g.duplicates[d] = append(g.duplicates[d], i)
		} else {
			dupIndex[p] = len(g.duplicates)
			g.duplicates = append(g.duplicates, []int{first, i})
		}
	}
	for v := range names {
		g.start[v+1] += g.start[v]
	}
	g.adj = make([]arc, len(kept))
	fill := slices.Clone(g.start[:len(names)])
	for _, i := range kept {
		v := ends[2*i]
		g.adj[fill[v]] = arc{to: ends[2*i+1], entry: i}
		fill[v]++
	}
	for v := range names {
		slices.SortFunc(g.adj[g.start[v]:g.start[v+1]], func(a, b arc) int { return a.to - b.to })
	}
	return g
}

// cycles reports one cycle per strongly connected component of more than one node:
// the shortest cycle through the component's smallest name. Listing every elementary
// cycle could be exponential; one per component names every component that is in a
// loop, and removing the reported edge set is what the user has to think about anyway.
func (g *graph) cycles(nudges []Edge) []Problem {
	comp, count := g.scc()
	size := make([]int, count)
	for _, c := range comp {
		size[c]++
	}
	// Nodes ascend by name, so the first node met of a component is its smallest name.
	var roots []int
	members := map[int][]int{}
	for v, c := range comp {
		if size[c] > 1 {
			if members[c] == nil {
				roots = append(roots, v)
			}
			members[c] = append(members[c], v)
		}
	}

	var problems []Problem
	parent := make([]int, len(g.names))
	parentEntry := make([]int, len(g.names))
	for i := range parent {
		parent[i] = -1
	}
	for _, s := range roots {
		path, entries := g.shortestCycle(s, comp, parent, parentEntry)
		pathNames := make([]string, len(path))
		for i, v := range path {
			pathNames[i] = g.names[v]
		}
		msg := "cycle detected: " + strings.Join(pathNames, " -> ")
		if vs := members[comp[s]]; len(vs) > len(path)-1 {
			msg += g.sccNote(vs)
		}
		problems = append(problems, Problem{Kind: Cycle, Entries: entries, Path: pathNames, Message: msg})
	}
	return problems
}

// maxNamed bounds how many members of a large loop a message lists: a message must stay
// readable (and within the API server's limits) even for a thousand-node loop.
const maxNamed = 10

// sccNote names the other members of a loop that is larger than the reported cycle.
func (g *graph) sccNote(vs []int) string {
	shown := vs[:min(len(vs), maxNamed)]
	names := make([]string, len(shown))
	for i, v := range shown {
		names[i] = g.names[v]
	}
	if len(vs) <= maxNamed {
		return " (components " + strings.Join(names, ", ") + " all nudge each other transitively)"
	}
	return fmt.Sprintf(" (%d components nudge each other transitively: %s and %d more)",
		len(vs), strings.Join(names, ", "), len(vs)-maxNamed)
}

// shortestCycle runs a breadth-first search from s inside s's component until an edge
// leads back to s. parent and parentEntry are scratch space shared across components
// (each node belongs to one component, so the searches never overlap).
func (g *graph) shortestCycle(s int, comp, parent, parentEntry []int) (path, entries []int) {
	queue := []int{s}
	parent[s] = s
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for k := g.start[u]; k < g.start[u+1]; k++ {
			v := g.adj[k].to
			if comp[v] != comp[s] {
				continue
			}
			if v == s {
				// Walk back from u to s, then close the loop.
				path = []int{s}
				entries = []int{g.adj[k].entry}
				for x := u; x != s; x = parent[x] {
					path = append(path, x)
					entries = append(entries, parentEntry[x])
				}
				path = append(path, s)
				slices.Reverse(path)
				slices.Reverse(entries)
				return path, entries
			}
			if parent[v] == -1 {
				parent[v], parentEntry[v] = u, g.adj[k].entry
				queue = append(queue, v)
			}
		}
	}
	panic("nudgegraph: a strongly connected component without a cycle through its root")
}

// scc labels each node with its strongly connected component (Tarjan, iterative so a
// long chain of untrusted input cannot exhaust the stack).
func (g *graph) scc() (comp []int, count int) {
	n := len(g.names)
	index := make([]int, n)
	low := make([]int, n)
	comp = make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	type frame struct{ v, next int }
	var call []frame
	counter, comps := 0, 0
	for root := range n {
		if index[root] != -1 {
			continue
		}
		call = append(call, frame{root, g.start[root]})
		index[root], low[root] = counter, counter
		counter++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			v := f.v
			if f.next < g.start[v+1] {
				w := g.adj[f.next].to
				f.next++
				if index[w] == -1 {
					index[w], low[w] = counter, counter
					counter++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, g.start[w]})
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].v
				low[p] = min(low[p], low[v])
			}
			if low[v] == index[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = comps
					if w == v {
						break
					}
				}
				comps++
			}
		}
	}
	return comp, comps
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
