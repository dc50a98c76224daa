package runtime_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// lanedProvider is an in-memory provider that declares lanes
// (duroxide.DispatchConcurrency) and counts the fetches running at once.
type lanedProvider struct {
	*memory.MemoryProvider
	orchLanes, workLanes int

	mu              sync.Mutex
	orchNow, orchMx int
	workNow, workMx int
}

func (p *lanedProvider) DispatchConcurrency() (int, int) { return p.orchLanes, p.workLanes }

// FetchOrchestrationItem blocks until ctx ends, counting its callers.
func (p *lanedProvider) FetchOrchestrationItem(ctx context.Context, _, _ time.Duration, _ *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	p.enter(&p.orchNow, &p.orchMx)
	defer p.leave(&p.orchNow)
	<-ctx.Done()
	return nil, ctx.Err()
}

// FetchWorkItem blocks until ctx ends, counting its callers.
func (p *lanedProvider) FetchWorkItem(ctx context.Context, _, _ time.Duration, _ *duroxide.SessionFetchConfig, _ duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	p.enter(&p.workNow, &p.workMx)
	defer p.leave(&p.workNow)
	<-ctx.Done()
	return nil, ctx.Err()
}

func (p *lanedProvider) enter(now, mx *int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	*now++
	*mx = max(*mx, *now)
}

func (p *lanedProvider) leave(now *int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	*now--
}

// maxima returns the most orchestration and work-item fetches seen at once.
func (p *lanedProvider) maxima() (int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.orchMx, p.workMx
}

// A runtime whose concurrencies are left at 0 runs as many dispatchers as
// the provider has lanes when that is more than the default of 2.
func TestRuntimeRunsADispatcherPerProviderLane(t *testing.T) {
	t.Parallel()
	p := &lanedProvider{MemoryProvider: memory.NewMemoryProvider(memory.MemoryOptions{}), orchLanes: 3, workLanes: 5}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := runtime.Start(ctx, p, runtime.NewRegistry(), runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rt.Shutdown(context.Background()) }()
	for {
		o, w := p.maxima()
		if o == 3 && w == 5 {
			return
		}
		if o > 3 || w > 5 || ctx.Err() != nil {
			t.Fatalf("fetches at once: %d orchestration, %d work item; want 3 and 5", o, w)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A runtime configured with fewer dispatchers than the provider's lanes is
// refused with an error that names the field and both numbers; fewer lanes
// than dispatchers is fine.
func TestRuntimeRefusesFewerDispatchersThanProviderLanes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		opts    runtime.Options
		wantErr string
	}{
		{runtime.Options{OrchestrationConcurrency: 2}, "Options.OrchestrationConcurrency is 2 but the provider splits its queue into 4 lanes"},
		{runtime.Options{WorkerConcurrency: 1}, "Options.WorkerConcurrency is 1 but the provider splits its queue into 3 lanes"},
		{runtime.Options{OrchestrationConcurrency: 4, WorkerConcurrency: 8}, ""},
		{runtime.Options{OrchestrationConcurrency: -1, WorkerConcurrency: -1}, ""},
	} {
		p := &lanedProvider{MemoryProvider: memory.NewMemoryProvider(memory.MemoryOptions{}), orchLanes: 4, workLanes: 3}
		rt, err := runtime.Start(context.Background(), p, runtime.NewRegistry(), c.opts)
		if c.wantErr == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.opts, err)
				continue
			}
			_ = rt.Shutdown(context.Background())
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%+v: Start error = %v, want one containing %q", c.opts, err, c.wantErr)
			if rt != nil {
				_ = rt.Shutdown(context.Background())
			}
		}
	}
}
