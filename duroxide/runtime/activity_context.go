package runtime

import (
	"cmp"
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
	attemptCount uint32
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

// AttemptCount returns how many times this activity's work item has been
// fetched, this delivery included: 1 the first time, more after a lost
// lock or a crashed worker redelivered it (duroxide's attempt_count; past
// Options.MaxAttempts it is poisoned). A retry policy's attempts are
// separate activities, each starting at 1.
func (a *ActivityContext) AttemptCount() uint32 { return a.attemptCount }

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

// ActivityInfo is what NewActivityContext puts in an ActivityContext.
type ActivityInfo struct {
	// InstanceID and ExecutionID are the orchestration's.
	InstanceID  string
	ExecutionID uint64
	// OrchestrationName and OrchestrationVersion are what
	// ActivityContext's accessors return ("unknown" when empty).
	OrchestrationName, OrchestrationVersion string
	// ActivityName and ActivityID are the activity's name and the id of
	// its ActivityScheduled event.
	ActivityName string
	ActivityID   uint64
	// AttemptCount is the work item's fetch count (0 means 1).
	AttemptCount uint32
	// WorkerID, SessionID and Tag are the accessors' values.
	WorkerID, SessionID, Tag string
	// Client is what ActivityContext.Client returns; nil is allowed when
	// the activity does not use it.
	Client *Client
	// Logger receives the activity's Trace* calls; nil discards them.
	Logger *slog.Logger
}

// NewActivityContext returns an ActivityContext over parent with info,
// for calling an activity function directly in a unit test (the runtime
// builds its own). Cancelling parent is what the runtime does when the
// result is no longer wanted: ActivityContext.IsCancelled and Done follow
// it. Package runtimetest's NewActivityContext fills in test defaults.
func NewActivityContext(parent context.Context, info ActivityInfo) *ActivityContext {
	if parent == nil {
		parent = context.Background()
	}
	attempt := info.AttemptCount
	if attempt == 0 {
		attempt = 1
	}
	name, version := info.OrchestrationName, info.OrchestrationVersion
	return &ActivityContext{
		Context: parent, instanceID: info.InstanceID, executionID: info.ExecutionID,
		activityName: info.ActivityName, activityID: info.ActivityID, workerID: info.WorkerID,
		attemptCount: attempt, sessionID: info.SessionID, tag: info.Tag, client: info.Client, logger: info.Logger,
		describe: func() (string, string) {
			return cmp.Or(name, "unknown"), cmp.Or(version, "unknown")
		},
	}
}
