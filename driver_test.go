package cdb_test

import (
	"context"
	"fmt"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// The calls a duroxide runtime makes for one hello-world orchestration
// (start, one activity, complete), driven directly, for request counting
// and fault tests.

const (
	helloOrch    = "Hello"
	helloVersion = "1.0.0"
	longLock     = 30 * time.Second
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
// instance's.
func fetchInstance(ctx context.Context, p duroxide.Provider, instance string) (*duroxide.OrchestrationItem, error) {
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	if item == nil || item.Instance != instance {
		return nil, fmt.Errorf("fetch: expected a turn of %q, got %+v", instance, item)
	}
	return item, nil
}
