package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/emulator"
	"github.com/duroxide-go/duroxide-cdb/providertest"
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
	factory() providertest.StressProviderFactory
	// requestCount is StressConfig.RequestCount, nil when the provider
	// makes no requests.
	requestCount() func() int64
	// opKinds returns the emulator's requests per operation kind over the
	// window of the two requestCount calls, or nil when not on the
	// emulator.
	opKinds() map[emulator.OpKind]int64
}

// memoryTarget is providertest's reference in-memory provider.
type memoryTarget struct{}

func (memoryTarget) name() string { return "memory" }

func (memoryTarget) prepare() targetRun { return memoryRun{} }

type memoryRun struct{}

func (memoryRun) factory() providertest.StressProviderFactory {
	return func(context.Context, providertest.StressRun) (duroxide.Provider, error) {
		return providertest.NewMemoryProvider(providertest.MemoryOptions{}), nil
	}
}

func (memoryRun) requestCount() func() int64 { return nil }

func (memoryRun) opKinds() map[emulator.OpKind]int64 { return nil }

// cdbTarget is the Cosmos DB provider: on a fresh embedded emulator per
// run when env has no endpoint, otherwise on env's account.
type cdbTarget struct {
	env cdb.Config
}

// newCDBTarget reads COSMOS_ENDPOINT, COSMOS_KEY, COSMOS_DATABASE and
// COSMOS_CONTAINER.
func newCDBTarget() cdbTarget { return cdbTarget{env: cdb.ConfigFromEnv()} }

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
		return "cdb on a fresh embedded emulator per run (internal/emulator, in-process: its work and heap count in this process)"
	}
	host := t.env.Endpoint
	if u, err := url.Parse(t.env.Endpoint); err == nil {
		host = u.Host
	}
	return fmt.Sprintf("cdb on %s (COSMOS_ENDPOINT)", host)
}

func (t cdbTarget) prepare() targetRun {
	return &cdbRun{env: t.env, transport: &countingTransport{}}
}

// cdbRun is one cdb run: the emulator it started (if any) and the
// counting transport of its client.
type cdbRun struct {
	env       cdb.Config
	transport *countingTransport

	mu    sync.Mutex
	emu   *emulator.Server
	snaps []map[emulator.OpKind]emulator.OpCounters
}

func (r *cdbRun) factory() providertest.StressProviderFactory {
	return func(ctx context.Context, run providertest.StressRun) (duroxide.Provider, error) {
		cfg := r.env
		var emu *emulator.Server
		r.transport.inner = http.DefaultClient
		if cfg.Endpoint == "" {
			var err error
			if emu, err = emulator.Start(emulator.Options{}); err != nil {
				return nil, fmt.Errorf("start the embedded emulator: %w", err)
			}
			cfg.Endpoint, cfg.Key, cfg.Container = emu.Endpoint(), emu.Key(), "stress"
			r.transport.inner = emu.HTTPClient()
		}
		cfg.ClientOptions = &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: r.transport}}
		cfg.OrchestrationConcurrency, cfg.WorkerConcurrency = run.OrchestrationConcurrency, run.WorkerConcurrency
		p, err := cdb.New(ctx, cfg)
		if err != nil {
			if emu != nil {
				_ = emu.Close()
			}
			return nil, err
		}
		r.mu.Lock()
		r.emu = emu
		r.mu.Unlock()
		return &closingProvider{Provider: p, emu: emu}, nil
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

// closingProvider is a cdb provider whose Close also stops the emulator it
// runs on.
type closingProvider struct {
	*cdb.Provider
	emu *emulator.Server
}

// Close closes the provider, then the emulator.
func (p *closingProvider) Close() error {
	err := p.Provider.Close()
	if p.emu != nil {
		err = errors.Join(err, p.emu.Close())
	}
	return err
}

// countingTransport is the azcosmos client's HTTP transport: it counts
// every request and attributes it to the provider call it belongs to
// (providertest.AttributeRequest). The provider disables the SDK's own
// retries, so each Do is one request to Cosmos DB.
type countingTransport struct {
	inner      policy.Transporter
	total      atomic.Int64
	attributed atomic.Int64
}

// Do counts req and sends it.
func (t *countingTransport) Do(req *http.Request) (*http.Response, error) {
	t.total.Add(1)
	if providertest.AttributeRequest(req.Context()) {
		t.attributed.Add(1)
	}
	return t.inner.Do(req)
}
