// Package debugcmd_test runs `nudgeflow debug` against a real API server holding
// hundreds of PipelineRuns, through a recording proxy: the answers are asserted,
// and so is how they were read: every PipelineRun request asked for and got
// metadata only (PartialObjectMetadata), selected by label on the server, paged.
package debugcmd_test

import (
	"os"
	"testing"

	"github.com/nudgeflow/nudgeflow/test/world"
)

func TestMain(m *testing.M) {
	os.Exit(world.Main(m, world.Options{WithoutTemporal: true}))
}
