// Test helpers shared by the root package's tests: the hello-world driver
// (startItem, helloWorld, fetchInstance), a controllable clock, and a
// cluster of several providers on one container of a private emulator, as
// separate processes would be (each with its own client, lock cache and
// clock), with a transport that runs a hook before chosen requests, to
// interleave processes deterministically.

package cdb_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
	"github.com/stretchr/testify/require"
)

// The calls a duroxide runtime makes for one hello-world orchestration
// (start, one activity, complete), driven directly, for request counting
// and fault tests.

const (
	helloOrch    = "Hello"
	helloVersion = "1.0.0"
	longLock     = 30 * time.Second
	// fetchWait is how long fetchInstance waits for a turn.
	fetchWait = 5 * time.Second
)

func startItem(instance string) duroxide.WorkItem {
	return duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{
		Instance: instance, Orchestration: helloOrch, Input: `"world"`,
		Version: duroxide.StringPtr(helloVersion), ExecutionID: 1,
	}}
}

func started(instance string) duroxide.Event {
	return duroxide.NewEvent(1, instance, 1, nil, duroxide.OrchestrationStarted{Name: helloOrch, Version: helloVersion, Input: `"world"`})
}

func runningMetadata() duroxide.ExecutionMetadata {
	v := duroxide.CurrentBuildVersion()
	return duroxide.ExecutionMetadata{
		Status:                duroxide.StringPtr(duroxide.StatusRunning),
		OrchestrationName:     duroxide.StringPtr(helloOrch),
		OrchestrationVersion:  duroxide.StringPtr(helloVersion),
		PinnedDuroxideVersion: &v,
	}
}

// helloStep names one provider call of the hello-world flow, for request
// accounting.
type helloStep string

const (
	stepEnqueue    helloStep = "EnqueueForOrchestrator"
	stepFetchNew   helloStep = "FetchOrchestrationItem (new instance)"
	stepAckFirst   helloStep = "AckOrchestrationItem (schedule activity)"
	stepFetchWork  helloStep = "FetchWorkItem"
	stepAckWork    helloStep = "AckWorkItem"
	stepFetchAgain helloStep = "FetchOrchestrationItem (with history)"
	stepAckLast    helloStep = "AckOrchestrationItem (complete)"
)

// helloWorld runs the flow for instance; after each call it calls step
// (which may be nil).
func helloWorld(ctx context.Context, p duroxide.Provider, instance string, step func(helloStep)) error {
	mark := func(s helloStep) {
		if step != nil {
			step(s)
		}
	}
	if err := p.EnqueueForOrchestrator(ctx, startItem(instance), 0); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	mark(stepEnqueue)
	item, err := fetchInstance(ctx, p, instance)
	if err != nil {
		return err
	}
	mark(stepFetchNew)
	scheduled := duroxide.NewEvent(2, instance, 1, nil, duroxide.ActivityScheduled{Name: "Greet", Input: `"world"`})
	act := duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: instance, ExecutionID: 1, ID: 2, Name: "Greet", Input: `"world"`}}
	if err := p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(instance), scheduled},
		[]duroxide.WorkItem{act}, nil, runningMetadata(), nil); err != nil {
		return fmt.Errorf("ack turn 1: %w", err)
	}
	mark(stepAckFirst)
	w, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	if err != nil || w == nil {
		return fmt.Errorf("fetch work item: %v, %v", w, err)
	}
	mark(stepFetchWork)
	done := duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: instance, ExecutionID: 1, ID: 2, Result: `"Hello, world"`}}
	if err := p.AckWorkItem(ctx, w.LockToken, &done); err != nil {
		return fmt.Errorf("ack work item: %w", err)
	}
	mark(stepAckWork)
	item, err = fetchInstance(ctx, p, instance)
	if err != nil {
		return err
	}
	if len(item.History) != 2 || len(item.Messages) != 1 {
		return fmt.Errorf("turn 2: %d events, %d messages", len(item.History), len(item.Messages))
	}
	mark(stepFetchAgain)
	completed := duroxide.NewEvent(3, instance, 1, duroxide.Uint64Ptr(2), duroxide.ActivityCompleted{Result: `"Hello, world"`})
	finished := duroxide.NewEvent(4, instance, 1, nil, duroxide.OrchestrationCompleted{Output: `"Hello, world"`})
	md := duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusCompleted), Output: duroxide.StringPtr(`"Hello, world"`)}
	if err := p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{completed, finished}, nil, nil, md, nil); err != nil {
		return fmt.Errorf("ack turn 2: %w", err)
	}
	mark(stepAckLast)
	return nil
}

// fetchInstance fetches the next orchestration turn, which must be
// instance's, waiting up to fetchWait for it: a turn another process
// enqueued is seen once this process's reads reach that write, at once on
// a strongly consistent store, a replica lag later on a lagging one.
func fetchInstance(ctx context.Context, p duroxide.Provider, instance string) (*duroxide.OrchestrationItem, error) {
	item, err := p.FetchOrchestrationItem(ctx, longLock, fetchWait, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	if item == nil || item.Instance != instance {
		return nil, fmt.Errorf("fetch: expected a turn of %q, got %+v", instance, item)
	}
	return item, nil
}

// testClock is a clock the tests move by hand.
type testClock struct{ ms atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ms.Store(time.Now().UnixMilli())
	return c
}

// Now is the clock, for Config.Now.
func (c *testClock) Now() time.Time { return time.UnixMilli(c.ms.Load()) }

// Advance moves the clock forward by d.
func (c *testClock) Advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// hookTransport sends requests to the emulator, first calling hook (when
// set) with each request; hook must not read the request body. answer,
// when set, sees each request's outcome and returns the one the client
// gets.
type hookTransport struct {
	inner  *http.Client
	mu     sync.Mutex
	hook   func(*http.Request)
	answer func(*http.Request, *http.Response, error) (*http.Response, error)
}

// Do implements policy.Transporter.
func (h *hookTransport) Do(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	f, a := h.hook, h.answer
	h.mu.Unlock()
	if f != nil {
		f(req)
	}
	resp, err := h.inner.Do(req)
	if a != nil {
		return a(req, resp, err)
	}
	return resp, err
}

// setAnswer installs a (nil removes it).
func (h *hookTransport) setAnswer(a func(*http.Request, *http.Response, error) (*http.Response, error)) {
	h.mu.Lock()
	h.answer = a
	h.mu.Unlock()
}

// setHook installs f (nil removes the hook).
func (h *hookTransport) setHook(f func(*http.Request)) {
	h.mu.Lock()
	h.hook = f
	h.mu.Unlock()
}

// cluster is one container of a private emulator that several providers
// share.
type cluster struct {
	account   *cdbtest.Account
	emu       *emulator.Server
	container string
}

func newCluster(t testing.TB) *cluster {
	t.Helper()
	a := cdbtest.NewEmulatorAccount(t, emulator.Options{})
	return &cluster{account: a, emu: a.Emulator(), container: "shared"}
}

// process starts a provider on the cluster's container with its own client
// (whose requests go through the returned hookTransport). The reconciler is
// off unless adjust turns it on. Its leases are in-process, so that every
// process can fetch every instance: the tests of a cluster make a given
// process fetch a given instance (the container leases, which split the
// slots, have their own tests).
func (c *cluster) process(t testing.TB, adjust func(*cdb.Config)) (*cdb.Provider, *hookTransport) {
	t.Helper()
	tr := &hookTransport{inner: c.emu.HTTPClient()}
	cfg := c.account.Config()
	cfg.Container, cfg.DisableReconciler, cfg.Leases = c.container, true, cdb.LeasesInProcess
	cfg.ClientOptions = &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: tr}}
	if adjust != nil {
		adjust(&cfg)
	}
	return c.account.NewProvider(t, cfg), tr
}

// isDocCreate reports whether req creates a document (a plain POST to the
// documents of a container: not a query, not a batch) in instance's
// partition.
func isDocCreate(req *http.Request, instance string) bool {
	return req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/docs") && !isQueryRequest(req) &&
		req.Header.Get("x-ms-cosmos-is-batch-request") == "" && req.Header.Get("x-ms-documentdb-is-upsert") == "" &&
		req.Header.Get("x-ms-documentdb-partitionkey") == `["`+instance+`"]`
}

// isQueryRequest reports whether req is a query (as the emulator tells).
func isQueryRequest(req *http.Request) bool {
	return req.Header.Get("x-ms-documentdb-isquery") != "" || strings.HasPrefix(req.Header.Get("Content-Type"), "application/query+json")
}

// requirePermanent requires err to be a permanent *duroxide.ProviderError.
func requirePermanent(t testing.TB, err error, msgAndArgs ...any) *duroxide.ProviderError {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	var pe *duroxide.ProviderError
	require.True(t, errors.As(err, &pe), "not a ProviderError: %T %v", err, err)
	require.False(t, pe.Retryable, "retryable: %v", err)
	return pe
}

// raised returns an ExternalRaised work item for instance.
func raised(instance, name, data string) duroxide.WorkItem {
	return duroxide.WorkItem{Kind: duroxide.ExternalRaisedItem{Instance: instance, Name: name, Data: data}}
}

// startAndAckFirst starts instance and commits its first turn (the started
// event, running), leaving it with no pending message.
func startAndAckFirst(t testing.TB, p duroxide.Provider, instance string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(instance), 0))
	item, err := fetchInstance(ctx, p, instance)
	require.NoError(t, err)
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(instance)}, nil, nil, runningMetadata(), nil))
}

// azNoPartition is the partition key of a cross-partition query.
func azNoPartition() azcosmos.PartitionKey { return azcosmos.NewPartitionKey() }

// providerGoroutines returns the stacks of the goroutines running code of
// package cdb (not its tests).
func providerGoroutines() []string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/duroxide-go/duroxide-cdb.") {
			out = append(out, g)
		}
	}
	return out
}

// goroutines returns the provider goroutines running now, for
// requireGoroutinesBack.
func goroutines() int { return len(providerGoroutines()) }

// requireGoroutinesBack waits (up to 10 s) until no more provider
// goroutines run than baseline, and fails with their stacks otherwise.
func requireGoroutinesBack(t testing.TB, baseline int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := providerGoroutines()
		if len(left) <= baseline {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d provider goroutines remain after Close (baseline %d):\n%s", len(left), baseline, strings.Join(left, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// activity returns the ActivityExecuteItem "A" with id id of execution 1 of
// instance.
func activity(instance string, id uint64) duroxide.WorkItem {
	return duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: instance, ExecutionID: 1, ID: id, Name: "A", Input: "i"}}
}

// externalEvent returns the ExternalEvent "e" with data as event eventID of
// execution 1 of instance.
func externalEvent(instance string, eventID uint64, data string) duroxide.Event {
	return duroxide.NewEvent(eventID, instance, 1, nil, duroxide.ExternalEvent{Name: "e", Data: data})
}

// ackNextTurn fetches instance's next turn with p and acks it with delta
// and the cancellations, returning the turn.
func ackNextTurn(t testing.TB, p duroxide.Provider, instance string, delta []duroxide.Event, cancelled ...duroxide.ScheduledActivityIdentifier) *duroxide.OrchestrationItem {
	t.Helper()
	ctx := context.Background()
	item, err := fetchInstance(ctx, p, instance)
	require.NoError(t, err)
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, delta, nil, nil, duroxide.ExecutionMetadata{}, cancelled))
	return item
}

// lockTurnAndWork starts instance, raises it an event and enqueues activity
// 2, then fetches (locks) both the turn and the work item.
func lockTurnAndWork(t testing.TB, p duroxide.Provider, instance string) (*duroxide.OrchestrationItem, *duroxide.LockedWorkItem) {
	t.Helper()
	ctx := context.Background()
	startAndAckFirst(t, p, instance)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(instance, "e", "d"), 0))
	item, err := fetchInstance(ctx, p, instance)
	require.NoError(t, err)
	require.NoError(t, p.EnqueueForWorker(ctx, activity(instance, 2)))
	w, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)
	return item, w
}
