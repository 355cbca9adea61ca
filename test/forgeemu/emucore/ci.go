package emucore

import "sync"

// Run says what a CI event was about: the repository's path ("owner/name",
// "group/project"), the pull or merge request's number (iid on GitLab) and the
// head commit it ran on.
type Run struct {
	Repo    string
	Number  int
	HeadSHA string
}

// CI is the CI runs an emulator counted by Pipelines as Code's rules (package pac
// decides; the emulator records), oldest first, as the forge's own event type E:
// the forge's exported events and its saved file keep their shape, and of says
// what each is about.
type CI[E any] struct {
	of func(E) Run

	mu     sync.Mutex
	events []E
}

// NewCI records events of type E; of reads what each was about.
func NewCI[E any](of func(E) Run) *CI[E] { return &CI[E]{of: of} }

// Record counts a run.
func (c *CI[E]) Record(e E) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, e)
}

// Events returns a copy of every run so far (nil for none).
func (c *CI[E]) Events() []E {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]E(nil), c.events...)
}

// Replace sets the runs (a loaded saved state).
func (c *CI[E]) Replace(events []E) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append([]E(nil), events...)
}

// Count is how many runs match.
func (c *CI[E]) Count(match func(E) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.events {
		if match(e) {
			n++
		}
	}
	return n
}

// ForRepo is how many runs repo had.
func (c *CI[E]) ForRepo(repo string) int {
	return c.Count(func(e E) bool { return c.of(e).Repo == repo })
}

// ForRequest is how many runs one pull or merge request of repo had.
func (c *CI[E]) ForRequest(repo string, number int) int {
	return c.Count(func(e E) bool { r := c.of(e); return r.Repo == repo && r.Number == number })
}

// RanFor reports whether a run started for commit sha in repo (an `/ok-to-test`
// after it is no news to Pipelines as Code).
func (c *CI[E]) RanFor(repo, sha string) bool {
	return c.Count(func(e E) bool { r := c.of(e); return r.Repo == repo && r.HeadSHA == sha }) > 0
}
