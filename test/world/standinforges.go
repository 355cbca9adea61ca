package world

// StandInForgeHosts are the forge hosts test worlds name in Components where no
// forge listens: a Renovate run there is a stand-in whose end a test writes, and
// the worker takes its delivery from the run's log (worker.Deps.StandInForgeHosts).
// Runs against the forge emulators (127.0.0.1) are asked of the forge.
var StandInForgeHosts = []string{"github.com", "gitlab.com"}
