package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/google/uuid"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
	"github.com/duroxide-go/duroxide-cdb/providertest/stress"
)

// The providers cdb-stress runs on: the in-memory reference, and cdb on a
// fresh embedded emulator per run or on the account COSMOS_ENDPOINT names.

// target is one provider to run the scenarios on.
type target interface {
	// name is the provider column of the results table.
	name() string
	// prepare returns the state of one run: its provider factory and its
	// request counter.
	prepare() targetRun
}

// targetRun is one run's provider factory and request accounting.
type targetRun interface {
	factory() stress.StressProviderFactory
	// requestCount is StressConfig.RequestCount, nil when the provider
	// makes no requests.
	requestCount() func() int64
	// requestCharge is StressConfig.RequestCharge, nil when the provider
	// makes no requests.
	requestCharge() func() float64
	// opKinds returns the emulator's requests per operation kind over the
	// window of the two requestCount calls, or nil when not on the
	// emulator.
	opKinds() map[emulator.OpKind]int64
	// persistence returns the work of the emulator's data directory over
	// the same window, or nil without one.
	persistence() *emulator.PersistenceStats
}

// memoryTarget is providertest's reference in-memory provider.
type memoryTarget struct{}

func (memoryTarget) name() string { return "memory" }

func (memoryTarget) prepare() targetRun { return memoryRun{} }

type memoryRun struct{}

func (memoryRun) factory() stress.StressProviderFactory {
	return func(context.Context, stress.StressRun) (duroxide.Provider, error) {
		return memory.NewMemoryProvider(memory.MemoryOptions{}), nil
	}
}

func (memoryRun) requestCount() func() int64 { return nil }

func (memoryRun) requestCharge() func() float64 { return nil }

func (memoryRun) opKinds() map[emulator.OpKind]int64 { return nil }

func (memoryRun) persistence() *emulator.PersistenceStats { return nil }

// cdbTarget is the Cosmos DB provider: on a fresh embedded emulator per
// run when env has no endpoint, otherwise on env's account.
type cdbTarget struct {
	env cdb.Config
	// latency is the embedded emulator's simulated per-request latency.
	latency emulator.Latency
	// dataDir is -data-dir: each run's emulator keeps its data in a
	// fresh directory under it; empty keeps it in memory.
	dataDir string
}

// newCDBTarget reads COSMOS_ENDPOINT, COSMOS_KEY, COSMOS_DATABASE and
// COSMOS_CONTAINER.
// latency is the embedded emulator's simulated per-request latency.
func newCDBTarget(latency emulator.Latency) cdbTarget {
	return cdbTarget{env: cdb.ConfigFromEnv(), latency: latency}
}

// onEmulator reports whether runs use the embedded emulator.
func (t cdbTarget) onEmulator() bool { return t.env.Endpoint == "" }

func (t cdbTarget) name() string {
	if t.onEmulator() {
		return "cdb (emulator)"
	}
	return "cdb"
}

// store describes where the runs' data lives, for the report.
func (t cdbTarget) store() string {
	if t.onEmulator() {
		s := "cdb on a fresh embedded emulator per run (emulator, in-process: its work and heap count in this process)"
		if !t.latency.IsZero() {
			s += ", simulated latency " + t.latency.String() + " per request"
		}
		if t.dataDir != "" {
			s += ", data directory under " + t.dataDir + " (write-ahead log, fsync before each acknowledgement)"
		}
		if t.env.DisableChangeFeedWakeups {
			s += ", no change-feed wake-ups"
		} else {
			s += ", change-feed wake-ups"
		}
		return s
	}
	host := t.env.Endpoint
	if u, err := url.Parse(t.env.Endpoint); err == nil {
		host = u.Host
	}
	return fmt.Sprintf("cdb on %s (COSMOS_ENDPOINT)", host)
}

func (t cdbTarget) prepare() targetRun {
	return &cdbRun{env: t.env, latency: t.latency, dataDir: t.dataDir, transport: &countingTransport{}}
}

// cdbRun is one cdb run: the emulator it started (if any) and the
// counting transport of its client.
type cdbRun struct {
	env       cdb.Config
	latency   emulator.Latency
	dataDir   string
	transport *countingTransport

	mu       sync.Mutex
	emu      *emulator.Server
	snaps    []map[emulator.OpKind]emulator.OpCounters
	persists []emulator.PersistenceStats
}

func (r *cdbRun) factory() stress.StressProviderFactory {
	return func(ctx context.Context, run stress.StressRun) (duroxide.Provider, error) {
		cfg := r.env
		var emu *emulator.Server
		var dataDir string
		r.transport.inner = http.DefaultClient
		if cfg.Endpoint == "" {
			// A fresh emulator per run from the test kit, with the run's
			// simulated latency.
			opts := emulator.Options{Latency: r.latency}
			if r.dataDir != "" {
				dir, err := os.MkdirTemp(r.dataDir, "cdb-stress-run-")
				if err != nil {
					return nil, err
				}
				opts.DataDir, dataDir = dir, dir
			}
			acct, err := cdbtest.OpenEmulator(opts)
			if err != nil {
				return nil, err
			}
			emu = acct.Emulator()
			base := acct.Config()
			cfg.Endpoint, cfg.Key, cfg.Database, cfg.Container = base.Endpoint, base.Key, base.Database, "stress"
			r.transport.inner = emu.HTTPClient()
		} else {
			// A shared account: every run gets a container of its own (the
			// scenarios reuse instance ids), removed again on Close.
			cfg.Container = runContainerName(cfg.Container)
		}
		cfg.ClientOptions = &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: r.transport}}
		cfg.OrchestrationLanes, cfg.WorkerLanes = run.OrchestrationConcurrency, run.WorkerConcurrency
		cfg.DisableEagerDispatch = !eagerOn()
		p, err := cdb.New(ctx, cfg)
		if err != nil {
			if emu != nil {
				_ = emu.Close()
			}
			if dataDir != "" {
				_ = os.RemoveAll(dataDir)
			}
			return nil, err
		}
		r.mu.Lock()
		r.emu = emu
		r.mu.Unlock()
		cp := &closingProvider{Provider: p, emu: emu, dataDir: dataDir}
		if emu == nil {
			cp.dropContainer = func() error { return deleteContainer(cfg) }
		}
		return cp, nil
	}
}

// requestCount counts every request of the run: the emulator's counters
// on the emulator, the transport's count otherwise.
func (r *cdbRun) requestCount() func() int64 {
	return func() int64 {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.emu == nil {
			return r.transport.total.Load()
		}
		c := r.emu.Counters()
		r.snaps = append(r.snaps, c)
		r.persists = append(r.persists, r.emu.PersistenceStats())
		var n int64
		for _, k := range c {
			n += k.Requests
		}
		return n
	}
}

func (r *cdbRun) opKinds() map[emulator.OpKind]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.snaps) < 2 {
		return nil
	}
	first, last := r.snaps[0], r.snaps[len(r.snaps)-1]
	out := map[emulator.OpKind]int64{}
	for k, c := range last {
		if d := c.Requests - first[k].Requests; d > 0 {
			out[k] = d
		}
	}
	return out
}

func (r *cdbRun) persistence() *emulator.PersistenceStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dataDir == "" || len(r.persists) < 2 {
		return nil
	}
	first, last := r.persists[0], r.persists[len(r.persists)-1]
	return &emulator.PersistenceStats{Records: last.Records - first.Records, Syncs: last.Syncs - first.Syncs,
		LogBytes: last.LogBytes - first.LogBytes, Compactions: last.Compactions - first.Compactions}
}

// closingProvider is a cdb provider whose Close also stops the emulator it
// runs on, or drops the run's container on a shared account.
type closingProvider struct {
	*cdb.Provider
	emu           *emulator.Server
	dropContainer func() error
	// dataDir is the emulator's data directory, removed after it closes.
	dataDir string
}

// Close closes the provider, then the emulator or the run's container.
func (p *closingProvider) Close() error {
	err := p.Provider.Close()
	if p.emu != nil {
		err = errors.Join(err, p.emu.Close())
	}
	if p.dataDir != "" {
		err = errors.Join(err, os.RemoveAll(p.dataDir))
	}
	if p.dropContainer != nil {
		err = errors.Join(err, p.dropContainer())
	}
	return err
}

// runContainerName returns a container name unique to one run on a shared
// account: the configured name (cdb's default when empty) plus
// "-stress-" and 12 random hex digits.
func runContainerName(base string) string {
	if base == "" {
		base = cdb.DefaultContainer
	}
	return base + "-stress-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
}

// deleteContainer removes the run's container from a shared account. It
// needs the account key; with Microsoft Entra ID credentials the container
// is left for the operator to remove.
func deleteContainer(cfg cdb.Config) error {
	if cfg.Key == "" {
		fmt.Fprintf(os.Stderr, "cdb-stress: container %s left in place (no key to delete it with)\n", cfg.Container)
		return nil
	}
	cred, err := azcosmos.NewKeyCredential(cfg.Key)
	if err != nil {
		return fmt.Errorf("delete container %s: %w", cfg.Container, err)
	}
	client, err := azcosmos.NewClientWithKey(cfg.Endpoint, cred, nil)
	if err != nil {
		return fmt.Errorf("delete container %s: %w", cfg.Container, err)
	}
	db := cfg.Database
	if db == "" {
		db = cdb.DefaultDatabase
	}
	c, err := client.NewContainer(db, cfg.Container)
	if err != nil {
		return fmt.Errorf("delete container %s: %w", cfg.Container, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Delete(ctx, nil); err != nil {
		return fmt.Errorf("delete container %s: %w", cfg.Container, err)
	}
	return nil
}

// requestCharge is the request units charged for the run's requests, as
// the responses' x-ms-request-charge reported them (on the emulator, its
// documented estimate; see emulator/README.md).
func (r *cdbRun) requestCharge() func() float64 {
	return func() float64 { return float64(r.transport.microRU.Load()) / 1e6 }
}

// countingTransport is the azcosmos client's HTTP transport: it counts
// every request and the request charge of every response
// (x-ms-request-charge), and attributes both to the provider call they
// belong to (stress.AttributeRequest, AttributeRequestCharge). The
// provider disables the SDK's own retries, so each Do is one request to
// Cosmos DB.
type countingTransport struct {
	inner      policy.Transporter
	total      atomic.Int64
	attributed atomic.Int64
	// microRU is the request charge of every response, in millionths of a
	// request unit.
	microRU atomic.Int64
}

// Do counts req, sends it, and counts the response's request charge.
func (t *countingTransport) Do(req *http.Request) (*http.Response, error) {
	t.total.Add(1)
	if stress.AttributeRequest(req.Context()) {
		t.attributed.Add(1)
	}
	resp, err := t.inner.Do(req)
	if resp != nil {
		if ru, perr := strconv.ParseFloat(resp.Header.Get("x-ms-request-charge"), 64); perr == nil && ru > 0 {
			t.microRU.Add(int64(ru*1e6 + 0.5))
			stress.AttributeRequestCharge(req.Context(), ru)
		}
	}
	return resp, err
}
