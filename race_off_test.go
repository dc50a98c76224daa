//go:build !race

package cdb_test

// raceDetector is true in a test binary built with -race, where every test
// costs several times the CPU (env_test.go runs fewer at once).
const raceDetector = false
