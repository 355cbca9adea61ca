package emucore

import (
	"fmt"
	"net/http"
	"os"
	"sync"

	"github.com/nudgeflow/nudgeflow/test/forgeemu/gitserve"
)

// Git serves an emulator's repositories over git's smart HTTP (package gitserve)
// from bare repositories in a temporary directory, made on the first git request
// (an emulator that nobody clones from leaves nothing on disk) and removed by
// Close. Without git on PATH the emulator still serves its API; git requests then
// fail saying why.
type Git struct {
	forge     gitserve.Forge
	dirPrefix string

	once sync.Once
	srv  *gitserve.Server
	dir  string
	err  error
}

// NewGit serves forge's repositories; dirPrefix names the temporary directory
// ("gitlab-emulator-git-").
func NewGit(forge gitserve.Forge, dirPrefix string) *Git {
	return &Git{forge: forge, dirPrefix: dirPrefix}
}

// Serve answers one git request; when git cannot be served, fail answers it
// with why (in the forge's error shape, as a 500).
func (g *Git) Serve(w http.ResponseWriter, r *http.Request, fail func(http.ResponseWriter, error)) {
	g.once.Do(func() {
		if g.dir, g.err = os.MkdirTemp("", g.dirPrefix+"*"); g.err != nil {
			g.err = fmt.Errorf("a directory for the git repositories: %w", g.err)
			return
		}
		g.srv, g.err = gitserve.New(g.forge, g.dir)
	})
	if g.err != nil {
		fail(w, g.err)
		return
	}
	g.srv.ServeHTTP(w, r)
}

// Close removes the repositories' directory. Call it after the HTTP server
// stopped: no git request may be in flight.
func (g *Git) Close() {
	if g.dir != "" {
		_ = os.RemoveAll(g.dir)
	}
}
