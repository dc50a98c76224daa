package runtime_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// prefetchProvider records the work items fetched ahead (with one worker:
// fetched before the activity of the previous item returned, which the
// activities of the test count in finished), their attempt counts, and the
// abandons.
type prefetchProvider struct {
	*memory.MemoryProvider
	// fetched counts the items fetched and not abandoned, finished the
	// activities that returned.
	fetched, finished  atomic.Int32
	fetchedWhileActive atomic.Int32
	mu                 sync.Mutex
	attempts           []uint32
	abandons           []bool // ignoreAttempt of each abandon
	abandoned          chan struct{}
	// stopping is closed when an orchestration fetch returns on a
	// cancelled context: the runtime's Shutdown has begun.
	stopping     chan struct{}
	stoppingOnce sync.Once
}

func newPrefetchProvider(e *env) *prefetchProvider {
	return &prefetchProvider{MemoryProvider: e.provider, abandoned: make(chan struct{}, 16), stopping: make(chan struct{})}
}

func (p *prefetchProvider) FetchOrchestrationItem(ctx context.Context, lock, poll time.Duration, f *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	item, err := p.MemoryProvider.FetchOrchestrationItem(ctx, lock, poll, f)
	if ctx.Err() != nil {
		p.stoppingOnce.Do(func() { close(p.stopping) })
	}
	return item, err
}

func (p *prefetchProvider) FetchWorkItem(ctx context.Context, lock, poll time.Duration, s *duroxide.SessionFetchConfig, f duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	item, err := p.MemoryProvider.FetchWorkItem(ctx, lock, poll, s, f)
	if item != nil {
		if n := p.fetched.Add(1); p.finished.Load() < n-1 {
			p.fetchedWhileActive.Add(1)
		}
		p.mu.Lock()
		p.attempts = append(p.attempts, item.AttemptCount)
		p.mu.Unlock()
	}
	return item, err
}

func (p *prefetchProvider) AbandonWorkItem(ctx context.Context, token string, delay time.Duration, ignoreAttempt bool) error {
	p.fetched.Add(-1) // its activity never runs: fetching it again is no fetch ahead
	p.mu.Lock()
	p.abandons = append(p.abandons, ignoreAttempt)
	p.mu.Unlock()
	p.abandoned <- struct{}{}
	return p.MemoryProvider.AbandonWorkItem(ctx, token, delay, ignoreAttempt)
}

// pairRegistry registers "Pair", which runs Step("a") and Step("b") in
// parallel and joins their results, with step as the activity.
func pairRegistry(t *testing.T, step runtime.ActivityFunc) *runtime.Registry {
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterActivity("Step", step),
		reg.RegisterOrchestration("Pair", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			a, b := ctx.ScheduleActivity("Step", "a"), ctx.ScheduleActivity("Step", "b")
			ra, err := a.Get()
			if err != nil {
				return "", err
			}
			rb, err := b.Get()
			return ra + rb, err
		}))
	return reg
}

// firstStepWaits returns an activity, counted in p.finished when it
// returns, whose first run waits for until (or 10 s) before returning its
// input.
func firstStepWaits(p *prefetchProvider, until func() bool) runtime.ActivityFunc {
	var first atomic.Bool
	return func(_ *runtime.ActivityContext, in string) (string, error) {
		defer p.finished.Add(1)
		if first.CompareAndSwap(false, true) {
			deadline := time.Now().Add(10 * time.Second)
			for !until() && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
		}
		return in, nil
	}
}

func oneWorker(hold time.Duration) runtime.Options {
	o := fastOptions()
	o.WorkerConcurrency, o.WorkerPrefetchHold = 1, hold
	return o
}

func TestWorkerFetchesTheNextItemWhileAnActivityRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := newPrefetchProvider(e)
	startOn(t, e, p, pairRegistry(t, firstStepWaits(p, func() bool { return p.fetchedWhileActive.Load() > 0 })), oneWorker(10*time.Second))
	wantOutput(t, e.run("prefetch-1", "Pair", ""), "ab")
	if p.fetchedWhileActive.Load() != 1 {
		t.Fatalf("the one worker fetched %d items while its activity ran, want 1", p.fetchedWhileActive.Load())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.abandons) != 0 {
		t.Fatalf("abandons: %v", p.abandons)
	}
}

func TestWorkItemFetchedAheadIsGivenUpAfterTheHold(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := newPrefetchProvider(e)
	abandoned := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.abandons) > 0
	}
	startOn(t, e, p, pairRegistry(t, firstStepWaits(p, abandoned)), oneWorker(20*time.Millisecond))
	wantOutput(t, e.run("prefetch-2", "Pair", ""), "ab")
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.abandons) != 1 || !p.abandons[0] {
		t.Fatalf("abandons (ignoreAttempt each): %v, want one that does not count the attempt", p.abandons)
	}
	for _, a := range p.attempts {
		if a != 1 {
			t.Fatalf("attempt counts %v: the given-up fetch must not count", p.attempts)
		}
	}
}

func TestWorkerPrefetchOffFetchesAfterTheActivity(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := newPrefetchProvider(e)
	var waited atomic.Int32
	wait := func() bool { return waited.Add(1) > 50 } // about 50 ms
	startOn(t, e, p, pairRegistry(t, firstStepWaits(p, wait)), oneWorker(-1))
	wantOutput(t, e.run("prefetch-off", "Pair", ""), "ab")
	if n := p.fetchedWhileActive.Load(); n != 0 {
		t.Fatalf("with WorkerPrefetchHold < 0 a worker fetched %d items while its activity ran", n)
	}
}

func TestShutdownGivesUpTheItemFetchedAhead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := newPrefetchProvider(e)
	release := make(chan struct{})
	step := firstStepWaits(p, func() bool {
		if p.fetchedWhileActive.Load() == 0 {
			return false
		}
		<-release
		return true
	})
	rt, err := runtime.Start(e.ctx, p, pairRegistry(t, step), oneWorker(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.client.StartOrchestration(e.ctx, "prefetch-stop", "Pair", ""); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); p.fetchedWhileActive.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(release)
			t.Fatal("the worker did not fetch the second item while the first activity ran")
		}
	}
	stopped := make(chan error, 1)
	go func() { stopped <- rt.Shutdown(context.Background()) }()
	select { // the activity returns once the runtime is stopping
	case <-p.stopping:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("Shutdown did not cancel the orchestration dispatcher's fetch")
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.abandoned:
	default:
		t.Fatal("the item fetched ahead was not abandoned at shutdown")
	}
	item, err := e.provider.FetchWorkItem(e.ctx, time.Second, 0, nil, duroxide.TagFilterDefaultOnly())
	if err != nil || item == nil {
		t.Fatalf("the item fetched ahead is available again at once: %v, %v", item, err)
	}
	if item.AttemptCount != 1 {
		t.Fatalf("attempt count %d: the abandon at shutdown must not count", item.AttemptCount)
	}
}
