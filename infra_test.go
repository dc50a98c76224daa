package cdb_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// TestNewCreatesContainer checks the container New creates: partition key
// /instanceId (large keys), the selective indexing policy (DESIGN.md §2.3) and its
// three composite indexes; and that a second New on the same container
// finds it (409) and works.
func TestNewCreatesContainer(t *testing.T) {
	cfg := env.config()
	p := startProvider(t, cfg)
	resp, err := p.Container().Read(context.Background(), nil)
	require.NoError(t, err)
	props := resp.ContainerProperties
	assert.Equal(t, []string{"/instanceId"}, props.PartitionKeyDefinition.Paths)
	assert.Equal(t, 2, props.PartitionKeyDefinition.Version)
	require.NotNil(t, props.IndexingPolicy)
	var included, excluded []string
	for _, p := range props.IndexingPolicy.IncludedPaths {
		included = append(included, p.Path)
	}
	for _, p := range props.IndexingPolicy.ExcludedPaths {
		excluded = append(excluded, p.Path)
	}
	assert.Subset(t, included, []string{"/type/?", "/instanceId/?", "/dispatchSlot/?", "/visibleAt/?", "/enqueuedAt/?", "/lockedUntil/?", "/executionId/?", "/eventId/?", "/status/?", "/parentInstanceId/?"})
	assert.Subset(t, excluded, []string{"/eventData/*", "/workItem/*", "/output/*", "/customStatus/*", "/*"})
	require.Len(t, props.IndexingPolicy.CompositeIndexes, 3)
	first := props.IndexingPolicy.CompositeIndexes[0]
	require.Len(t, first, 4)
	assert.Equal(t, "/dispatchSlot", first[1].Path)

	require.NoError(t, p.EnqueueForOrchestrator(context.Background(), startItem("kept"), 0))
	p2 := startProvider(t, cfg)
	item, err := p2.FetchOrchestrationItem(context.Background(), longLock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item, "the second provider uses the existing container")
	assert.Equal(t, "kept", item.Instance)
}

// TestNewBacksOffOnThrottling throttles database and container creation
// and checks that New waits and succeeds.
func TestNewBacksOffOnThrottling(t *testing.T) {
	t.Parallel()
	s, err := emulator.Start(emulator.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	s.InjectFault(emulator.FaultRule{Op: emulator.OpDatabase, Times: 1, Fault: emulator.TooManyRequests(0)})
	s.InjectFault(emulator.FaultRule{Op: emulator.OpContainer, Times: 2, Fault: emulator.TooManyRequests(0)})
	cfg := cdb.Config{Endpoint: s.Endpoint(), Key: s.Key(), DisableReconciler: true}
	cfg.ClientOptions = clientOptions(s)
	p, err := cdb.New(context.Background(), cfg)
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, helloWorld(context.Background(), p, "after-throttling", nil))
}

// TestCloseStopsReconciler checks that a closed provider delivers nothing
// any more (its reconciler stopped) and that Close is idempotent.
func TestCloseStopsReconciler(t *testing.T) {
	t.Parallel()
	const interval = 100 * time.Millisecond
	p, s := newPrivateProvider(t, func(c *cdb.Config) {
		c.ReconcilerInterval, c.ReconcilerAgeThreshold = interval, interval
	})
	child := "closing::child"
	remove := s.InjectFault(emulator.FaultRule{Op: emulator.OpCreateItem, PartitionKey: &child, Fault: emulator.ServiceUnavailable()})
	startChild(t, p, "closing", child)
	require.NoError(t, p.Close())
	require.NoError(t, p.Close())
	remove()
	time.Sleep(5 * interval)
	assert.Equal(t, 1, pendingIntents(t, p, "closing"), "no reconciler ran after Close")
}

// TestConcurrentLanes runs fetches from as many goroutines as the
// configured concurrency and checks that every instance is fetched exactly
// once, whatever lane its dispatch slot falls in.
func TestConcurrentLanes(t *testing.T) {
	p := newProvider(t, func(c *cdb.Config) { c.OrchestrationLanes, c.WorkerLanes = 4, 4 })
	ctx := context.Background()
	const n = 40
	for i := 0; i < n; i++ {
		require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(fmt.Sprintf("lane-%d", i)), 0))
	}
	var mu sync.Mutex
	fetched := map[string]int{}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for empty := 0; empty < 8; {
				item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
				if !assert.NoError(t, err) {
					return
				}
				if item == nil {
					empty++
					continue
				}
				empty = 0
				mu.Lock()
				fetched[item.Instance]++
				mu.Unlock()
				assert.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(item.Instance)}, nil, nil, runningMetadata(), nil))
			}
		}()
	}
	wg.Wait()
	assert.Len(t, fetched, n)
	for id, c := range fetched {
		assert.Equal(t, 1, c, "instance %s", id)
	}
}

// TestLoggerReceivesWarnings checks that the configured zap logger gets
// the provider's warnings: here, dropping queue messages of an instance
// that was never started.
func TestLoggerReceivesWarnings(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	p := newProvider(t, func(c *cdb.Config) { c.Logger = zap.New(core) })
	ctx := context.Background()
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.WorkItem{Kind: duroxide.QueueMessageItem{Instance: "never-started", Name: "q", Data: "d"}}, 0))
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	assert.Nil(t, item)
	require.Equal(t, 1, logs.FilterMessageSnippet("dropping queue messages").Len())
	entry := logs.FilterMessageSnippet("dropping queue messages").All()[0]
	assert.Equal(t, "never-started", entry.ContextMap()["instance"])
	depths, err := p.GetQueueDepths(ctx)
	require.NoError(t, err)
	assert.Zero(t, depths.OrchestratorQueue, "the orphan message was deleted")
}

// TestADeletedContainerIsAPermanentErrorThatNamesIt: when the container is
// deleted under a running provider (the store restarted empty), every call
// and Ping fail with a permanent error matching cdb.ErrContainerNotFound
// whose text names the container, the database and the endpoint, instead
// of a bare "404 Not Found"; once the container exists again, the same
// provider works at once.
func TestADeletedContainerIsAPermanentErrorThatNamesIt(t *testing.T) {
	t.Parallel()
	cfg := env.config()
	p := startProvider(t, cfg)
	ctx := context.Background()
	require.NoError(t, p.Ping(ctx), "ping of a healthy container")
	_, err := p.Container().Delete(ctx, nil)
	require.NoError(t, err)

	for what, err := range map[string]error{
		"ping":    p.Ping(ctx),
		"enqueue": p.EnqueueForOrchestrator(ctx, startItem("after-delete"), 0),
	} {
		require.ErrorIs(t, err, cdb.ErrContainerNotFound, what)
		var pe *duroxide.ProviderError
		require.ErrorAs(t, err, &pe, what)
		assert.False(t, pe.Retryable, "%s: a missing container is permanent", what)
		assert.Contains(t, err.Error(), fmt.Sprintf("container %q in database %q not found at ", cfg.Container, cfg.Database), what)
		assert.Contains(t, err.Error(), "deleted?", what)
	}

	startProvider(t, cfg) // a restarted service: New creates the container
	require.NoError(t, p.Ping(ctx), "the same provider works once the container exists again")
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem("after-recreate"), 0))
}

// TestNewOnAHungEndpointGivesUpAtTheConnectTimeout: an endpoint that
// accepts connections and never answers makes New return once
// Config.ConnectTimeout has passed, saying it gave up, with each retry
// logged; before, each try waited for the SDK's own timeout and New took
// over two minutes without a line.
func TestNewOnAHungEndpointGivesUpAtTheConnectTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	core, logs := observer.New(zapcore.WarnLevel)
	start := time.Now()
	_, err = cdb.New(context.Background(), cdb.Config{
		Endpoint: "http://" + ln.Addr().String() + "/", Key: emulator.WellKnownKey,
		ConnectTimeout: 2 * time.Second, Logger: zap.New(core),
	})
	took := time.Since(start)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gave up after 2s")
	assert.Less(t, took, 20*time.Second, "New must return about ConnectTimeout after it started")
	assert.NotZero(t, logs.FilterMessage("cannot reach Cosmos DB yet; retrying").Len(), "each retry is logged")
}
