package runtime

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// instrumentedProvider is the provider as the runtime's dispatchers call
// it: duroxide's InstrumentedProvider (src/providers/instrumented.rs),
// recording duroxide_provider_operation_duration_seconds and
// duroxide_provider_errors_total for the same eight operations; every
// other method is the wrapped provider's.
type instrumentedProvider struct {
	duroxide.Provider
	m *runtimeMetrics
}

// observe records one call of operation that took since start.
func (p instrumentedProvider) observe(operation string, start time.Time, err error) {
	ctx := context.Background()
	status := "success"
	if err != nil {
		status = "error"
		p.m.providerErrors.Add(ctx, 1, metric.WithAttributes(attribute.String("operation", operation), attribute.String("error_type", providerErrorType(err))))
	}
	p.m.providerDuration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(attribute.String("operation", operation), attribute.String("status", status)))
}

// providerErrorType classifies a provider error by its message as duroxide
// does: deadlock, timeout, connection or other.
func providerErrorType(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "deadlock"):
		return "deadlock"
	case strings.Contains(msg, "timeout"):
		return "timeout"
	case strings.Contains(msg, "connection"):
		return "connection"
	}
	return "other"
}

// FetchOrchestrationItem is the wrapped provider's, measured.
func (p instrumentedProvider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	start := time.Now()
	item, err := p.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	p.observe("fetch_orchestration_item", start, err)
	return item, err
}

// AckOrchestrationItem is the wrapped provider's, measured.
func (p instrumentedProvider) AckOrchestrationItem(ctx context.Context, lockToken string, executionID uint64, historyDelta []duroxide.Event, workerItems, orchestratorItems []duroxide.WorkItem, metadata duroxide.ExecutionMetadata, cancelledActivities []duroxide.ScheduledActivityIdentifier) error {
	start := time.Now()
	err := p.Provider.AckOrchestrationItem(ctx, lockToken, executionID, historyDelta, workerItems, orchestratorItems, metadata, cancelledActivities)
	p.observe("ack_orchestration_item", start, err)
	return err
}

// Read is the wrapped provider's, measured.
func (p instrumentedProvider) Read(ctx context.Context, instance string) ([]duroxide.Event, error) {
	start := time.Now()
	events, err := p.Provider.Read(ctx, instance)
	p.observe("read", start, err)
	return events, err
}

// FetchWorkItem is the wrapped provider's, measured.
func (p instrumentedProvider) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *duroxide.SessionFetchConfig, tagFilter duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	start := time.Now()
	item, err := p.Provider.FetchWorkItem(ctx, lockTimeout, pollTimeout, session, tagFilter)
	p.observe("fetch_work_item", start, err)
	return item, err
}

// AckWorkItem is the wrapped provider's, measured.
func (p instrumentedProvider) AckWorkItem(ctx context.Context, lockToken string, completion *duroxide.WorkItem) error {
	start := time.Now()
	err := p.Provider.AckWorkItem(ctx, lockToken, completion)
	p.observe("ack_work_item", start, err)
	return err
}

// RenewSessionLock is the wrapped provider's, measured.
func (p instrumentedProvider) RenewSessionLock(ctx context.Context, ownerIDs []string, extendFor, idleTimeout time.Duration) (int, error) {
	start := time.Now()
	n, err := p.Provider.RenewSessionLock(ctx, ownerIDs, extendFor, idleTimeout)
	p.observe("renew_session_lock", start, err)
	return n, err
}

// CleanupOrphanedSessions is the wrapped provider's, measured.
func (p instrumentedProvider) CleanupOrphanedSessions(ctx context.Context, idleTimeout time.Duration) (int, error) {
	start := time.Now()
	n, err := p.Provider.CleanupOrphanedSessions(ctx, idleTimeout)
	p.observe("cleanup_orphaned_sessions", start, err)
	return n, err
}

// EnqueueForOrchestrator is the wrapped provider's, measured.
func (p instrumentedProvider) EnqueueForOrchestrator(ctx context.Context, item duroxide.WorkItem, delay time.Duration) error {
	start := time.Now()
	err := p.Provider.EnqueueForOrchestrator(ctx, item, delay)
	p.observe("enqueue_orchestrator", start, err)
	return err
}
