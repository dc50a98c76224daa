// Package testparallel sets how many parallel tests a test binary runs at
// once when the command line does not say (-parallel).
//
// The project's provider tests mostly wait (lock timeouts, poll intervals,
// simulated outages) rather than compute, and go test's default
// parallelism, GOMAXPROCS, is only 2 on a 2-core machine, which runs such
// tests nearly one after another. A package whose tests are of that kind
// calls Default from its TestMain.
package testparallel

import (
	"flag"
	"strconv"
)

// Default sets the testing package's -test.parallel flag to n unless the
// command line gave it; it parses the command line first (TestMain may
// call flag.Parse itself, as the testing package documents). It must be
// called from TestMain before m.Run. It returns the error of flag.Set,
// which fails only if the testing flags are not registered (not a test
// binary).
func Default(n int) error {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given {
		return nil
	}
	return flag.Set("test.parallel", strconv.Itoa(max(n, 1)))
}
