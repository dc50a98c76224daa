package conformance_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// scenarioResult is one line of a scenario script's output
// (node/scenarios.js, python/scenarios.py).
type scenarioResult struct {
	Scenario string `json:"scenario"`
	OK       bool   `json:"ok"`
	Error    string `json:"error"`
}

// scenarioEmulators are the emulators each SDK's scenarios run on, each
// as a parallel subtest named after its consistency.
var scenarioEmulators = []struct {
	name  string
	start func(*testing.T) (*emulator.Server, string)
}{{"strong", startTLSEmulator}, {"session", startSessionEmulator}}

// startTLSEmulator starts an emulator over HTTPS with two physical
// partitions, as cmd/cdb-emulator serves it, and writes its certificate to a
// temporary PEM file, returned with it.
func startTLSEmulator(t *testing.T) (*emulator.Server, string) {
	t.Helper()
	// Strong: the scenarios read their own writes without session tokens
	// (@azure/cosmos sends them only to a client built with
	// consistencyLevel "Session"); the session scenarios run on
	// startSessionEmulator's.
	return startTLSEmulatorWith(t, emulator.Options{Consistency: emulator.ConsistencyStrong})
}

// startSessionEmulator is startTLSEmulator at Session consistency, with
// secondaries ten minutes behind: during a run they apply no write, so a
// read without the write's session token is served stale by three
// replicas of four.
func startSessionEmulator(t *testing.T) (*emulator.Server, string) {
	t.Helper()
	return startTLSEmulatorWith(t, emulator.Options{Consistency: emulator.ConsistencySession, ReplicaLag: 10 * time.Minute})
}

func startTLSEmulatorWith(t *testing.T, opts emulator.Options) (*emulator.Server, string) {
	t.Helper()
	opts.TLS, opts.PhysicalPartitions = true, 2
	srv, err := emulator.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	certFile := filepath.Join(t.TempDir(), "emulator.pem")
	if err := os.WriteFile(certFile, srv.CertificatePEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, certFile
}

// runScenarios runs a scenario script (name, args) in dir with env added to
// the environment, and reports each JSON line it prints as a subtest. It
// fails when the script fails or prints no result.
func runScenarios(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()

	var results []scenarioResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r scenarioResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Scenario == "" {
			t.Logf("%s: %s", filepath.Base(name), sc.Bytes())
			continue
		}
		results = append(results, r)
	}
	if runErr != nil || len(results) == 0 {
		t.Fatalf("%s %s: %v (%d results)\nstderr:\n%s", name, strings.Join(args, " "), runErr, len(results), stderr.String())
	}
	for _, r := range results {
		t.Run(r.Scenario, func(t *testing.T) {
			if !r.OK {
				t.Error(r.Error)
			}
		})
	}
}

// summaryLine picks one line of a tool's output for a one-line skip
// message: the first holding one of the markers, else the first non-empty
// line.
func summaryLine(b []byte, markers ...string) string {
	lines := strings.Split(string(b), "\n")
	for _, m := range markers {
		for _, l := range lines {
			if strings.Contains(l, m) {
				return strings.TrimSpace(l)
			}
		}
	}
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return "no output"
}
