package emucore

import "sync"

// CIEvent is one pull or merge request event that started a CI run by Pipelines
// as Code's rules (package pac decides; the emulator records).
type CIEvent struct {
	// Repo is the repository's path ("owner/name", "group/project").
	Repo string
	// Number is the pull request's number, the merge request's iid.
	Number  int
	Action  string
	HeadSHA string
}

// CI is the CI runs an emulator counted, oldest first.
type CI struct {
	mu     sync.Mutex
	events []CIEvent
}

// Record counts a run.
func (c *CI) Record(e CIEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, e)
}

// Events returns a copy of every run so far.
func (c *CI) Events() []CIEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]CIEvent(nil), c.events...)
}

// Replace sets the runs (a loaded saved state).
func (c *CI) Replace(events []CIEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append([]CIEvent(nil), events...)
}

// Count is how many runs match.
func (c *CI) Count(match func(CIEvent) bool) int {
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
func (c *CI) ForRepo(repo string) int {
	return c.Count(func(e CIEvent) bool { return e.Repo == repo })
}

// ForRequest is how many runs one pull or merge request of repo had.
func (c *CI) ForRequest(repo string, number int) int {
	return c.Count(func(e CIEvent) bool { return e.Repo == repo && e.Number == number })
}

// RanFor reports whether a run started for commit sha in repo (an `/ok-to-test`
// after it is no news to Pipelines as Code).
func (c *CI) RanFor(repo, sha string) bool {
	return c.Count(func(e CIEvent) bool { return e.Repo == repo && e.HeadSHA == sha }) > 0
}
