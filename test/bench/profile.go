package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
)

// startProfile starts a CPU profile of this process for one measure and returns
// the function that stops it and writes the allocation profile beside it (allocs
// since the process started: compare with -base against the previous measure's, or
// read -sample_index=alloc_space of a single-measure run). No dir: nothing.
func startProfile(dir, measure string) (stop func() error, err error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cpu, err := os.Create(filepath.Join(dir, "cpu-"+measure+".pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		_ = cpu.Close()
		return nil, fmt.Errorf("starting the CPU profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		errs := []error{cpu.Close()}
		allocs, err := os.Create(filepath.Join(dir, "allocs-"+measure+".pprof"))
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		runtime.GC()
		errs = append(errs, pprof.Lookup("allocs").WriteTo(allocs, 0), allocs.Close())
		return errors.Join(errs...)
	}, nil
}
