package runtime

import (
	"context"
	"log/slog"
	"sync"
)

// ActivityContext is what an activity receives (duroxide's ActivityContext).
// It is a context.Context: it is cancelled when the runtime learns, while
// renewing the activity's lock, that the result is no longer wanted (the
// orchestration terminated, the activity lost a select, or the lock was
// lost) and when the runtime shuts down, so pass it to I/O and watch Done.
type ActivityContext struct {
	context.Context

	instanceID   string
	executionID  uint64
	activityName string
	activityID   uint64
	workerID     string
	sessionID    string
	tag          string
	client       *Client
	logger       *slog.Logger

	// describe reads the orchestration's name and version on first use.
	describe     func() (name, version string)
	describeOnce sync.Once
	orchName     string
	orchVersion  string
}

// InstanceID returns the orchestration instance the activity belongs to.
func (a *ActivityContext) InstanceID() string { return a.instanceID }

// ExecutionID returns the orchestration's execution id.
func (a *ActivityContext) ExecutionID() uint64 { return a.executionID }

// OrchestrationName returns the orchestration's name, read from its history
// on first use ("unknown" when the history cannot be read).
func (a *ActivityContext) OrchestrationName() string {
	a.describeOnce.Do(a.loadDescription)
	return a.orchName
}

// OrchestrationVersion returns the orchestration's version, read from its
// history on first use ("unknown" when the history cannot be read).
func (a *ActivityContext) OrchestrationVersion() string {
	a.describeOnce.Do(a.loadDescription)
	return a.orchVersion
}

func (a *ActivityContext) loadDescription() {
	a.orchName, a.orchVersion = "unknown", "unknown"
	if a.describe != nil {
		a.orchName, a.orchVersion = a.describe()
	}
}

// ActivityName returns the activity's registered name.
func (a *ActivityContext) ActivityName() string { return a.activityName }

// ActivityID returns the id of the ActivityScheduled event.
func (a *ActivityContext) ActivityID() uint64 { return a.activityID }

// WorkerID returns the id of the worker goroutine running the activity.
func (a *ActivityContext) WorkerID() string { return a.workerID }

// SessionID returns the activity's session, or "" when it has none.
func (a *ActivityContext) SessionID() string { return a.sessionID }

// Tag returns the activity's routing tag, or "" when untagged.
func (a *ActivityContext) Tag() string { return a.tag }

// IsCancelled reports whether the activity has been asked to stop.
func (a *ActivityContext) IsCancelled() bool { return a.Err() != nil }

// Client returns a Client on the runtime's provider, for activities that
// start or signal other orchestrations.
func (a *ActivityContext) Client() *Client { return a.client }

// TraceInfo logs message at INFO with the activity's correlation fields.
func (a *ActivityContext) TraceInfo(message string) { a.trace(slog.LevelInfo, message) }

// TraceWarn logs message at WARN with the activity's correlation fields.
func (a *ActivityContext) TraceWarn(message string) { a.trace(slog.LevelWarn, message) }

// TraceError logs message at ERROR with the activity's correlation fields.
func (a *ActivityContext) TraceError(message string) { a.trace(slog.LevelError, message) }

func (a *ActivityContext) trace(level slog.Level, message string) {
	if a.logger == nil {
		return
	}
	a.logger.Log(a, level, message, "instance_id", a.instanceID, "execution_id", a.executionID,
		"activity_name", a.activityName, "activity_id", a.activityID, "worker_id", a.workerID)
}
