package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// The built-in system activities behind NewGUID, UtcNow and
// GetKVValueFromInstance (duroxide's SYSCALL_ACTIVITY_*); their names are
// part of the history format.
const (
	syscallNewGUID    = syscallPrefix + "new_guid"
	syscallUtcNowMs   = syscallPrefix + "utc_now_ms"
	syscallGetKVValue = syscallPrefix + "get_kv_value"
)

// OrchestrationContext is what an orchestration function receives
// (duroxide's OrchestrationContext): the way to schedule durable work and to
// read replay-safe state. A new context is built for every turn; it must
// only be used from the orchestration's own goroutine.
type OrchestrationContext struct {
	mu      sync.Mutex
	state   *ctxState
	co      *coroutine
	futures []*Future

	instance    string
	executionID uint64
	name        string
	version     string
	logger      *slog.Logger
	now         func() time.Time
}

func newOrchestrationContext(instance string, executionID uint64, name, version string, logger *slog.Logger) *OrchestrationContext {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &OrchestrationContext{
		state:       newCtxState(),
		instance:    instance,
		executionID: executionID,
		name:        name,
		version:     version,
		logger:      logger,
		now:         time.Now,
	}
}

// InstanceID returns the orchestration instance id.
func (c *OrchestrationContext) InstanceID() string { return c.instance }

// ExecutionID returns the execution id (1, then +1 per continue-as-new).
func (c *OrchestrationContext) ExecutionID() uint64 { return c.executionID }

// OrchestrationName returns the registered name being run.
func (c *OrchestrationContext) OrchestrationName() string { return c.name }

// OrchestrationVersion returns the version being run, e.g. "1.0.0".
func (c *OrchestrationContext) OrchestrationVersion() string { return c.version }

// IsReplaying reports whether the code is re-executing history (true) or
// running past it (false); use it to skip side effects such as logs on
// replay.
func (c *OrchestrationContext) IsReplaying() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state.replaying
}

func (c *OrchestrationContext) setReplaying(v bool) {
	c.mu.Lock()
	c.state.replaying = v
	c.mu.Unlock()
}

// Trace logs message at level ("INFO", "WARN", "ERROR", "DEBUG") with the
// instance's correlation fields, only when not replaying (duroxide's
// replay-guarded trace).
func (c *OrchestrationContext) Trace(level, message string) {
	if c.IsReplaying() {
		return
	}
	c.log(level, message)
}

// log writes a Trace message without the replay check.
func (c *OrchestrationContext) log(level, message string) {
	lvl := slog.LevelInfo
	switch level {
	case "WARN", "warn":
		lvl = slog.LevelWarn
	case "ERROR", "error":
		lvl = slog.LevelError
	case "DEBUG", "debug":
		lvl = slog.LevelDebug
	}
	c.logger.Log(context.Background(), lvl, message,
		"instance_id", c.instance, "execution_id", c.executionID,
		"orchestration_name", c.name, "orchestration_version", c.version)
}

// TraceInfo is Trace("INFO", message).
func (c *OrchestrationContext) TraceInfo(message string) { c.Trace("INFO", message) }

// TraceWarn is Trace("WARN", message).
func (c *OrchestrationContext) TraceWarn(message string) { c.Trace("WARN", message) }

// TraceError is Trace("ERROR", message).
func (c *OrchestrationContext) TraceError(message string) { c.Trace("ERROR", message) }

// waitUntil blocks the orchestration until ready (called under c.mu) is
// true.
func (c *OrchestrationContext) waitUntil(ready func() bool) {
	for !c.locked(ready) {
		c.co.block()
	}
}

// locked runs f under c.mu and returns its result. The deferred unlock
// matters: f polls futures the orchestration code handed in, and a panic
// there (recovered by the coroutine as a Panicked failure) must not leave
// c.mu held, or the engine would block on it for ever.
func (c *OrchestrationContext) locked(f func() bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return f()
}

// newFuture emits a and returns the future that resolves through check.
func (c *OrchestrationContext) newFuture(a action, kind scheduleKind, check func(s *ctxState, token uint64) (completion, bool)) *Future {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.newFutureLocked(a, kind, check)
}

// newFutureLocked is newFuture for a caller that holds c.mu (a composite
// future scheduling its next step while it is polled).
func (c *OrchestrationContext) newFutureLocked(a action, kind scheduleKind, check func(s *ctxState, token uint64) (completion, bool)) *Future {
	token := c.state.emit(a)
	f := &Future{ctx: c, token: token, kind: kind}
	f.check = func(s *ctxState) (completion, bool) { return check(s, token) }
	c.futures = append(c.futures, f)
	return f
}

// resultCheck resolves a future from the result delivered to its token.
func resultCheck(s *ctxState, token uint64) (completion, bool) {
	r, ok := s.results[token]
	return r, ok
}

// dropPending cancels every future not observed by the time the
// orchestration function returns (duroxide drops them at the end of the
// function's scope).
func (c *OrchestrationContext) dropPending() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.futures {
		f.cancelLocked()
	}
}

func (c *OrchestrationContext) nowMs() uint64 { return uint64(c.now().UnixMilli()) }

// ActivityOptions are the routing options of ScheduleActivityWith.
type ActivityOptions struct {
	// SessionID pins the activity to the worker that owns the session
	// (claimed on first fetch); empty means no session.
	SessionID string
	// Tag routes the activity to workers whose TagFilter accepts it; empty
	// means untagged. At most duroxide.MaxTagNameBytes bytes, or the
	// orchestration fails at the end of the turn.
	Tag string
}

// ScheduleActivity schedules activity name with input and returns its
// future (duroxide's schedule_activity).
func (c *OrchestrationContext) ScheduleActivity(name, input string) *Future {
	return c.ScheduleActivityWith(name, input, ActivityOptions{})
}

// ScheduleActivityOnSession schedules activity name on session sessionID
// (duroxide's schedule_activity_on_session).
func (c *OrchestrationContext) ScheduleActivityOnSession(name, input, sessionID string) *Future {
	return c.ScheduleActivityWith(name, input, ActivityOptions{SessionID: sessionID})
}

// ScheduleActivityWith schedules activity name with a session and/or tag
// (duroxide's schedule_activity_on_session and DurableFuture::with_tag).
func (c *OrchestrationContext) ScheduleActivityWith(name, input string, opts ActivityOptions) *Future {
	return c.newFuture(activityAction(name, input, opts), kindActivity, resultCheck)
}

// activityAction is the action that schedules activity name with opts.
func activityAction(name, input string, opts ActivityOptions) action {
	a := action{kind: actCallActivity, name: name, input: input}
	if opts.SessionID != "" {
		a.sessionID = duroxide.StringPtr(opts.SessionID)
	}
	if opts.Tag != "" {
		a.tag = duroxide.StringPtr(opts.Tag)
	}
	return a
}

// ScheduleTimer schedules a durable timer that fires after delay (duroxide's
// schedule_timer); its future resolves with "".
func (c *OrchestrationContext) ScheduleTimer(delay time.Duration) *Future {
	return c.newFuture(c.timerAction(delay), kindTimer, resultCheck)
}

// timerAction is the action that creates a timer firing after delay.
func (c *OrchestrationContext) timerAction(delay time.Duration) action {
	return action{kind: actCreateTimer, fireAtMs: c.nowMs() + uint64(max(delay, 0).Milliseconds())}
}

// ScheduleWait subscribes to the external event name (duroxide's
// schedule_wait); its future resolves with the event's data. Events are
// matched to subscriptions by position; an event raised while no
// subscription waits for it is dropped.
func (c *OrchestrationContext) ScheduleWait(name string) *Future {
	return c.newFuture(action{kind: actWaitExternal, name: name}, kindExternalWait, func(s *ctxState, token uint64) (completion, bool) {
		id, bound := s.boundID(token)
		if !bound {
			return completion{}, false
		}
		data, ok := s.externalEvent(id)
		return completion{value: data}, ok
	})
}

// DequeueEvent takes the next message of the persistent queue name
// (duroxide's dequeue_event): FIFO, buffered until consumed, carried across
// continue-as-new. Its future resolves with the message data.
func (c *OrchestrationContext) DequeueEvent(queue string) *Future {
	return c.newFuture(action{kind: actDequeueEvent, name: queue}, kindQueueDequeue, func(s *ctxState, token uint64) (completion, bool) {
		id, bound := s.boundID(token)
		if !bound {
			return completion{}, false
		}
		data, ok := s.queueMessage(id)
		return completion{value: data}, ok
	})
}

// SubOrchestrationOptions are the options of ScheduleSubOrchestrationWith.
type SubOrchestrationOptions struct {
	// InstanceID is the child's instance id, used exactly as given (no
	// parent prefix; "::sub::" inside it is allowed); one that begins with
	// "sub::" is refused with ErrReservedChildID. Empty means generated:
	// "<parent>::sub::<event id>", "<parent>::sub::<execution>_<event id>"
	// after continue-as-new.
	InstanceID string
	// Version pins the child's version; empty means the registry policy.
	Version string
}

// ScheduleSubOrchestration starts orchestration name as a child with a
// generated instance id and returns its future (duroxide's
// schedule_sub_orchestration).
func (c *OrchestrationContext) ScheduleSubOrchestration(name, input string) *Future {
	return c.ScheduleSubOrchestrationWith(name, input, SubOrchestrationOptions{})
}

// ScheduleSubOrchestrationWithID starts a child with the explicit instance
// id instance, used exactly as given (duroxide's
// schedule_sub_orchestration_with_id); an id that begins with "sub::"
// returns a future failed with ErrReservedChildID.
func (c *OrchestrationContext) ScheduleSubOrchestrationWithID(name, instance, input string) *Future {
	return c.ScheduleSubOrchestrationWith(name, input, SubOrchestrationOptions{InstanceID: instance})
}

// ScheduleSubOrchestrationWith starts a child with options (duroxide's
// schedule_sub_orchestration_versioned_with_id). An explicit InstanceID
// that begins with "sub::" is refused as duroxide main does: the returned
// future has already failed with ErrReservedChildID (naming the id), and
// nothing is scheduled or recorded, so replays refuse it the same way.
func (c *OrchestrationContext) ScheduleSubOrchestrationWith(name, input string, opts SubOrchestrationOptions) *Future {
	if strings.HasPrefix(opts.InstanceID, duroxide.SubOrchAutoPrefix) {
		return &Future{ctx: c, kind: kindSubOrchestration, done: true, result: completion{
			err: fmt.Errorf("sub-orchestration instance id %s: %w", duroxide.QuoteInstanceID(opts.InstanceID), ErrReservedChildID),
		}}
	}
	a := action{kind: actStartSubOrchestration, name: name, input: input, instance: opts.InstanceID}
	if opts.Version != "" {
		a.version = duroxide.StringPtr(opts.Version)
	}
	if a.instance == "" {
		c.mu.Lock()
		a.instance = subOrchPendingPrefix + strconv.FormatUint(c.state.nextToken+1, 10)
		c.mu.Unlock()
	}
	return c.newFuture(a, kindSubOrchestration, resultCheck)
}

// ScheduleOrchestration starts orchestration name as the independent
// instance instance, fire-and-forget (duroxide's schedule_orchestration): no
// result comes back and the new instance has no parent.
func (c *OrchestrationContext) ScheduleOrchestration(name, instance, input string) {
	c.ScheduleOrchestrationVersioned(name, "", instance, input)
}

// ScheduleOrchestrationVersioned is ScheduleOrchestration with a version
// ("" = registry policy).
//
// The detached instance is a root instance, so its id obeys
// Client.StartOrchestration's rule: an id that begins with "sub::" or
// contains "::sub::" (ErrReservedInstanceID) panics, which fails the
// calling orchestration ("reserved sub-orchestration marker") with nothing
// started, as duroxide main's schedule_orchestration does.
func (c *OrchestrationContext) ScheduleOrchestrationVersioned(name, version, instance, input string) {
	if reservedChildID(instance) {
		panic(fmt.Sprintf("schedule_orchestration: instance id %s uses the reserved sub-orchestration marker: %v",
			duroxide.QuoteInstanceID(instance), ErrReservedInstanceID))
	}
	a := action{kind: actStartDetached, name: name, instance: instance, input: input}
	if version != "" {
		a.version = duroxide.StringPtr(version)
	}
	c.mu.Lock()
	c.state.emit(a)
	c.mu.Unlock()
}

// ContinueAsNew ends this execution and starts the next one with input
// (duroxide's continue_as_new). It never returns: write
// `return "", ctx.ContinueAsNew(next)`.
func (c *OrchestrationContext) ContinueAsNew(input string) error {
	return c.continueAsNew(action{kind: actContinueAsNew, input: input})
}

// ContinueAsNewVersioned is ContinueAsNew into version of the
// orchestration.
func (c *OrchestrationContext) ContinueAsNewVersioned(version, input string) error {
	return c.continueAsNew(action{kind: actContinueAsNew, input: input, version: duroxide.StringPtr(version)})
}

func (c *OrchestrationContext) continueAsNew(a action) error {
	c.mu.Lock()
	c.state.emit(a)
	c.mu.Unlock()
	c.waitUntil(func() bool { return false })
	return errors.New("unreachable")
}

// SetCustomStatus sets the instance's custom status (recorded as
// CustomStatusUpdated; readable with Client.GetOrchestrationStatus).
func (c *OrchestrationContext) SetCustomStatus(status string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state.customStatus = duroxide.StringPtr(status)
	c.state.emit(action{kind: actUpdateCustomStatus, status: duroxide.StringPtr(status)})
}

// ResetCustomStatus clears the custom status.
func (c *OrchestrationContext) ResetCustomStatus() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state.customStatus = nil
	c.state.emit(action{kind: actUpdateCustomStatus})
}

// CustomStatus returns the current custom status, including one carried
// over by continue-as-new; ok is false when none is set.
func (c *OrchestrationContext) CustomStatus() (status string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state.customStatus == nil {
		return "", false
	}
	return *c.state.customStatus, true
}

// SetKVValue sets key to value in the instance's KV store (recorded as
// KeyValueSet stamped with the current time).
func (c *OrchestrationContext) SetKVValue(key, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.nowMs()
	c.state.kv[key] = value
	c.state.kvUpdatedAt[key] = now
	c.state.emit(action{kind: actSetKeyValue, key: key, value: value, lastUpdatedAtMs: now})
}

// KVValue reads key from the instance's KV store (no I/O, replay-safe).
func (c *OrchestrationContext) KVValue(key string) (value string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	value, ok = c.state.kv[key]
	return value, ok
}

// KVAllValues returns a copy of the instance's KV store.
func (c *OrchestrationContext) KVAllValues() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]string, len(c.state.kv))
	for k, v := range c.state.kv {
		out[k] = v
	}
	return out
}

// KVAllKeys returns the KV keys in ascending order.
func (c *OrchestrationContext) KVAllKeys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.state.kv))
	for k := range c.state.kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// KVLength returns the number of KV keys.
func (c *OrchestrationContext) KVLength() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.state.kv)
}

// ClearKVValue removes key (recorded as KeyValueCleared).
func (c *OrchestrationContext) ClearKVValue(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.state.kv, key)
	delete(c.state.kvUpdatedAt, key)
	c.state.emit(action{kind: actClearKeyValue, key: key})
}

// ClearAllKVValues removes every key (recorded as KeyValuesCleared).
func (c *OrchestrationContext) ClearAllKVValues() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.state.kv)
	clear(c.state.kvUpdatedAt)
	c.state.emit(action{kind: actClearKeyValues})
}

// PruneKVValuesUpdatedBefore clears, in key order, every key last updated
// before updatedBeforeMs (milliseconds since the Unix epoch) and returns how
// many it cleared.
func (c *OrchestrationContext) PruneKVValuesUpdatedBefore(updatedBeforeMs uint64) int {
	c.mu.Lock()
	var keys []string
	for k, ts := range c.state.kvUpdatedAt {
		if _, live := c.state.kv[k]; live && ts < updatedBeforeMs {
			keys = append(keys, k)
		}
	}
	c.mu.Unlock()
	slices.Sort(keys)
	for _, k := range keys {
		c.ClearKVValue(k)
	}
	return len(keys)
}

// GetKVValueFromInstance reads key from another instance's KV store through
// duroxide's built-in get_kv_value system activity, so the value read is
// recorded and replayed. The future's value is the JSON of an optional
// string (null or "text"); DecodeKVValue reads it.
func (c *OrchestrationContext) GetKVValueFromInstance(instance, key string) *Future {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // serde_json does not escape <, > and &
	_ = enc.Encode(struct {
		InstanceID string `json:"instance_id"`
		Key        string `json:"key"`
	}{instance, key})
	return c.ScheduleActivity(syscallGetKVValue, string(bytes.TrimRight(buf.Bytes(), "\n")))
}

// DecodeKVValue reads the result of GetKVValueFromInstance: ok is false
// when the key did not exist.
func DecodeKVValue(result string) (value string, ok bool, err error) {
	var v *string
	if err := json.Unmarshal([]byte(result), &v); err != nil {
		return "", false, fmt.Errorf("get_kv_value_from_instance deserialization error: %w", err)
	}
	if v == nil {
		return "", false, nil
	}
	return *v, true, nil
}

// NewGUID returns a GUID generated by duroxide's built-in new_guid system
// activity: recorded once, the same on every replay. It waits for the
// system activity as Get does and cannot fail: the runtime's new_guid has
// no failure path. Only a history that records a failed new_guid (written
// by hand, or damaged) makes it fail the orchestration, with a Panicked
// failure naming the recorded error.
//
// Adding a NewGUID call to an orchestration that has running instances
// changes its history (a new system activity): see README's replay
// section for the safe way (a new version).
func (c *OrchestrationContext) NewGUID() string {
	s, err := c.ScheduleActivity(syscallNewGUID, "").Get()
	if err != nil {
		panic(fmt.Sprintf("new_guid: the history records a failed system activity: %v", err))
	}
	return s
}

// UtcNow returns the current time as recorded by duroxide's built-in
// utc_now_ms system activity: the same on every replay, millisecond
// precision, in UTC. It waits for the system activity as Get does and
// cannot fail: the runtime's utc_now_ms has no failure path. Only a
// history that records a failed utc_now_ms or a value that is not a
// number of milliseconds (written by hand, or damaged) makes it fail the
// orchestration, with a Panicked failure naming the cause.
//
// Adding a UtcNow call to an orchestration that has running instances
// changes its history (a new system activity): see README's replay
// section for the safe way (a new version).
func (c *OrchestrationContext) UtcNow() time.Time {
	s, err := c.ScheduleActivity(syscallUtcNowMs, "").Get()
	if err != nil {
		panic(fmt.Sprintf("utc_now: the history records a failed system activity: %v", err))
	}
	ms, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("utc_now: the history records %q, not a number of milliseconds", s))
	}
	return time.UnixMilli(int64(ms)).UTC()
}

// Join waits for all futures and returns their outcomes in order (duroxide's
// join). A nil future's outcome is an error, without waiting; a cancelled
// one's is ErrCanceled, without waiting.
//
// Each wake-up polls from the first future not yet seen resolved and stops
// at the first that is still pending, so a join of N futures costs O(N)
// polls in all over a replay rather than O(N) per wake-up (O(N²) per turn
// for a fan-out whose results arrive one by one). Polling is a lookup with
// no effect beyond marking the future observed, so the order is not
// observable.
func (c *OrchestrationContext) Join(futures ...*Future) []Result {
	next := 0 // futures[:next] are nil or settled
	c.waitUntil(func() bool {
		for ; next < len(futures); next++ {
			if f := futures[next]; f != nil && !f.settled() {
				return false
			}
		}
		return true
	})
	out := make([]Result, len(futures))
	for i, f := range futures {
		if f == nil {
			out[i] = Result{Err: errNilFuture}
			continue
		}
		v, err := f.outcome()
		out[i] = Result{Value: v, Err: err}
	}
	return out
}

// Select waits for the first of futures to resolve, checking them in order
// (duroxide's biased select), and returns its index and outcome. The losers
// are cancelled as duroxide cancels dropped futures: their Get returns
// ErrCanceled at once. A future cancelled before the call never wins (it
// is skipped, as in earlier releases, so recorded races replay the same).
// It returns index -1 and
// an error, without waiting or cancelling anything, when called without
// futures or with a nil one.
func (c *OrchestrationContext) Select(futures ...*Future) (winner int, value string, err error) {
	if len(futures) == 0 {
		return -1, "", errors.New("runtime: Select needs at least one future")
	}
	if i := slices.Index(futures, nil); i >= 0 {
		return -1, "", fmt.Errorf("runtime: Select future %d: %w", i, errNilFuture)
	}
	winner = -1
	c.waitUntil(func() bool {
		for i, f := range futures {
			if f.poll() {
				winner = i
				return true
			}
		}
		return false
	})
	c.locked(func() bool {
		for i, f := range futures {
			if i != winner {
				f.cancelLocked()
			}
		}
		return true
	})
	w := futures[winner]
	return winner, w.result.value, w.result.err
}
