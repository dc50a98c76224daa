package main

import (
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"runtime/pprof"
)

// Profiling of a whole cdb-stress invocation (every scenario, provider and
// configuration it runs): -cpuprofile writes a CPU profile, -memprofile a
// heap profile taken at the end, -mutexprofile and -blockprofile the
// contention profiles; read them with `go tool pprof`. The emulator runs
// in the same process, so its work shows in the profiles next to the
// provider's and the runtime's.

// profileFlags are the profile output files; "" disables each.
type profileFlags struct {
	cpu, mem, mutex, block string
}

// mutexProfileFraction and blockProfileRate are the sampling rates used
// while the contention profiles are on: one mutex contention event in 5,
// and every blocking event that lasts at least 10 µs (the rate is in ns).
const (
	mutexProfileFraction = 5
	blockProfileRate     = 10_000
)

// startProfiles starts the profiles f asks for and returns the function
// that stops them and writes their files. A file that cannot be created
// is an error before anything runs.
func startProfiles(f profileFlags) (stop func() error, err error) {
	var cpuFile *os.File
	if f.cpu != "" {
		if cpuFile, err = os.Create(f.cpu); err != nil {
			return nil, fmt.Errorf("-cpuprofile: %w", err)
		}
		if err = pprof.StartCPUProfile(cpuFile); err != nil {
			_ = cpuFile.Close()
			return nil, fmt.Errorf("-cpuprofile: %w", err)
		}
	}
	if f.mutex != "" {
		goruntime.SetMutexProfileFraction(mutexProfileFraction)
	}
	if f.block != "" {
		goruntime.SetBlockProfileRate(blockProfileRate)
	}
	return func() error {
		var errs []error
		if cpuFile != nil {
			pprof.StopCPUProfile()
			errs = append(errs, cpuFile.Close())
		}
		if f.mem != "" {
			goruntime.GC() // the heap profile shows the live heap as of the last GC
			errs = append(errs, writeProfile("heap", f.mem))
		}
		if f.mutex != "" {
			errs = append(errs, writeProfile("mutex", f.mutex))
			goruntime.SetMutexProfileFraction(0)
		}
		if f.block != "" {
			errs = append(errs, writeProfile("block", f.block))
			goruntime.SetBlockProfileRate(0)
		}
		return errors.Join(errs...)
	}, nil
}

// writeProfile writes the named runtime/pprof profile to path.
func writeProfile(name, path string) error {
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s profile: %w", name, err)
	}
	if err := pprof.Lookup(name).WriteTo(out, 0); err != nil {
		_ = out.Close()
		return fmt.Errorf("%s profile: %w", name, err)
	}
	return out.Close()
}
