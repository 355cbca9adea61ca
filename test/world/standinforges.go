package world

import "sync"

// standInForges are the forge hosts of test worlds where no Renovate writes: a
// Renovate run there is a stand-in whose end a test writes, and the worker takes
// its delivery from the run's log (worker.Deps.StandInForge). github.com and
// gitlab.com are hosts the worlds name in Components with no forge behind them; a
// world whose stand-in runs target a forge emulator adds the emulator's host.
// Runs of the real Renovate against the emulators are asked of the forge.
var standInForges = struct {
	sync.Mutex
	hosts map[string]bool
}{hosts: map[string]bool{"github.com": true, "gitlab.com": true}}

// AddStandInForge marks host ("host:port" as in a clone URL) as one where only
// stand-in runs go.
func AddStandInForge(host string) {
	standInForges.Lock()
	defer standInForges.Unlock()
	standInForges.hosts[host] = true
}

// IsStandInForge says whether only stand-in runs go to host.
func IsStandInForge(host string) bool {
	standInForges.Lock()
	defer standInForges.Unlock()
	return standInForges.hosts[host]
}
