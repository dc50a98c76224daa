package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// memStoredEvent is one history row: the event's id and its JSON (the
// serde-compatible encoding of duroxide.Event), decoded on every read, as
// SQLite stores event_data. Storing bytes keeps history immune to later
// changes of the caller's values and lets the HistoryCorrupter hook
// replace them with undecodable data that fetch then reports in
// HistoryError.
type memStoredEvent struct {
	id   uint64
	data []byte
}

// decode returns the row's event or the decoding error.
func (s memStoredEvent) decode() (duroxide.Event, error) {
	var ev duroxide.Event
	if err := json.Unmarshal(s.data, &ev); err != nil {
		return duroxide.Event{}, err
	}
	return ev, nil
}

// latestExecution returns the highest execution id recorded for instance,
// or 1 when there is none (SQLite's COALESCE(MAX(execution_id), 1)); the
// caller holds p.mu.
func (p *MemoryProvider) latestExecution(instance string) uint64 {
	latest := uint64(0)
	for id := range p.executions[instance] {
		latest = max(latest, id)
	}
	if latest == 0 {
		return duroxide.InitialExecutionID
	}
	return latest
}

// memHistory is one execution's history: its rows in event-id order
// (the source of truth, as SQLite's history table) and, beside them, the
// same events decoded once when they were appended, which fetches hand out
// without decoding the whole history again on every turn.
type memHistory struct {
	rows []memStoredEvent
	// events[i] is rows[i] decoded from its bytes at append (a private
	// copy: nothing in it shares memory with the caller's events). Never
	// modified in place: appends only extend it, and a fetch returns it
	// capped (events[:n:n]) so that a caller's append copies.
	events []duroxide.Event
	// corrupt is set by CorruptHistory: the rows no longer match events,
	// and every read decodes the rows (and reports the error).
	corrupt bool
}

// len returns the number of events; a nil history has none.
func (h *memHistory) len() int {
	if h == nil {
		return 0
	}
	return len(h.rows)
}

// all returns the rows in event-id order; a nil history has none.
func (h *memHistory) all() []memStoredEvent {
	if h == nil {
		return nil
	}
	return h.rows
}

// readHistory decodes one execution's history in event-id order into
// fresh values; the caller holds p.mu.
func (p *MemoryProvider) readHistory(instance string, execution uint64) ([]duroxide.Event, error) {
	rows := p.history[instance][execution].all()
	events := make([]duroxide.Event, 0, len(rows))
	for i, r := range rows {
		ev, err := r.decode()
		if err != nil {
			return nil, fmt.Errorf("failed to deserialize history event at position %d for instance '%s' execution %d: %w", i, instance, execution, err)
		}
		events = append(events, ev)
	}
	return events, nil
}

// turnHistory returns one execution's history for a fetch: the events
// decoded at append, shared and capped (events[:n:n]), so that a turn costs
// no decoding of the history it already stored; a corrupted history is
// decoded from its rows, which reports the error. The caller holds p.mu
// and must treat the events as read-only (as the runtime does; cdb's held
// history hands out its events the same way, DESIGN.md §13).
func (p *MemoryProvider) turnHistory(instance string, execution uint64) ([]duroxide.Event, error) {
	h := p.history[instance][execution]
	if h == nil || h.corrupt {
		return p.readHistory(instance, execution)
	}
	n := len(h.events)
	return h.events[:n:n], nil
}

// encodeAppend validates events for appending to one execution (every
// event id set by the runtime, non-zero and unique in the execution, every
// event encodable) and returns their rows with private decoded copies;
// nothing is stored. The caller holds p.mu.
func (p *MemoryProvider) encodeAppend(instance string, execution uint64, events []duroxide.Event) ([]memStoredEvent, []duroxide.Event, error) {
	stored := p.history[instance][execution].all()
	seen := make(map[uint64]bool, len(events))
	rows := make([]memStoredEvent, 0, len(events))
	copies := make([]duroxide.Event, 0, len(events))
	for _, ev := range events {
		if ev.EventID == 0 {
			return nil, nil, fmt.Errorf("event_id must be set by runtime")
		}
		_, dup := slices.BinarySearchFunc(stored, ev.EventID, func(r memStoredEvent, id uint64) int { return cmp.Compare(r.id, id) })
		if dup || seen[ev.EventID] {
			return nil, nil, fmt.Errorf("duplicate event_id %d for instance '%s' execution %d", ev.EventID, instance, execution)
		}
		seen[ev.EventID] = true
		data, err := json.Marshal(ev)
		if err != nil {
			return nil, nil, fmt.Errorf("event %d cannot be serialized: %w", ev.EventID, err)
		}
		row := memStoredEvent{id: ev.EventID, data: data}
		copied, err := row.decode()
		if err != nil {
			return nil, nil, fmt.Errorf("event %d cannot be serialized: %w", ev.EventID, err)
		}
		rows = append(rows, row)
		copies = append(copies, copied)
	}
	return rows, copies, nil
}

// appendHistory stores rows and their decoded copies returned by
// encodeAppend, keeping the execution ordered by event id: appended in
// place when they follow the stored events in order (every turn), sorted
// otherwise. The caller holds p.mu.
func (p *MemoryProvider) appendHistory(instance string, execution uint64, rows []memStoredEvent, copies []duroxide.Event) {
	if len(rows) == 0 {
		return
	}
	byExec := p.history[instance]
	if byExec == nil {
		byExec = map[uint64]*memHistory{}
		p.history[instance] = byExec
	}
	h := byExec[execution]
	if h == nil {
		h = &memHistory{}
		byExec[execution] = h
	}
	inOrder := slices.IsSortedFunc(rows, func(a, b memStoredEvent) int { return cmp.Compare(a.id, b.id) }) &&
		(len(h.rows) == 0 || h.rows[len(h.rows)-1].id < rows[0].id)
	h.rows = append(h.rows, rows...)
	h.events = append(h.events, copies...)
	if inOrder {
		return
	}
	idx := make([]int, len(h.rows))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(h.rows[a].id, h.rows[b].id) })
	sortedRows := make([]memStoredEvent, len(idx))
	sortedEvents := make([]duroxide.Event, len(idx))
	for i, j := range idx {
		sortedRows[i], sortedEvents[i] = h.rows[j], h.events[j]
	}
	h.rows, h.events = sortedRows, sortedEvents // new arrays: slices handed out keep their order
}

// readOp is the body of every history read: op names the operation in
// errors, and a nil execution means the latest one. An undecodable event
// is a permanent error.
func (p *MemoryProvider) readOp(ctx context.Context, op, instance string, execution *uint64) ([]duroxide.Event, error) {
	if err := memCtxErr(op, ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	exec := p.latestExecution(instance)
	if execution != nil {
		exec = *execution
	}
	events, err := p.readHistory(instance, exec)
	if err != nil {
		return nil, duroxide.WrapError(op, false, err)
	}
	return events, nil
}

// Read returns the latest execution's history (duroxide's read): empty for
// an unknown instance, a permanent error for an undecodable event.
func (p *MemoryProvider) Read(ctx context.Context, instance string) ([]duroxide.Event, error) {
	return p.readOp(ctx, "read", instance, nil)
}

// ReadWithExecution returns one execution's history, empty when it does not
// exist.
func (p *MemoryProvider) ReadWithExecution(ctx context.Context, instance string, executionID uint64) ([]duroxide.Event, error) {
	return p.readOp(ctx, "read_with_execution", instance, &executionID)
}

// AppendWithExecution appends events to an execution outside a turn, all or
// nothing: a zero or duplicate event id is a permanent error and nothing is
// written. Like SQLite it creates no instance or execution record.
func (p *MemoryProvider) AppendWithExecution(ctx context.Context, instance string, executionID uint64, events []duroxide.Event) error {
	if err := memCtxErr("append_with_execution", ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rows, copies, err := p.encodeAppend(instance, executionID, events)
	if err != nil {
		return memPermanentCause("append_with_execution", "Failed to append history: ", err)
	}
	p.appendHistory(instance, executionID, rows, copies)
	return nil
}

// CorruptHistory replaces every stored history event of instance with data
// that cannot be decoded (the MemoryFactory's HistoryCorrupter hook).
func (p *MemoryProvider) CorruptHistory(instance string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.history[instance] {
		h.corrupt = true
		rows := h.rows
		for i := range rows {
			rows[i].data = []byte(`{"type":"UnknownEventFromTheFuture","event_id":` + fmt.Sprint(rows[i].id) + `,"garbage":`)
		}
	}
}

// MaxAttemptCount returns the highest attempt count among instance's
// orchestrator-queue messages (the MemoryFactory's AttemptCountReader hook).
func (p *MemoryProvider) MaxAttemptCount(instance string) uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var m uint32
	for _, r := range p.orchQueue {
		if r.instance == instance {
			m = max(m, r.attempts)
		}
	}
	return m
}
