package providertest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// memStoredEvent is one history row. ev is the event as appended; raw, when
// non-nil, is the stored form that replaced it (the HistoryCorrupter hook
// writes undecodable bytes there), and reading the row then decodes raw,
// which fails for anything but a valid event. This keeps the provider
// independent of the event JSON codec while letting corruption reach fetch
// exactly as it reaches SQLite's read_history_in_tx.
type memStoredEvent struct {
	id  uint64
	ev  duroxide.Event
	raw []byte
}

// decode returns the row's event or the decoding error.
func (s memStoredEvent) decode() (duroxide.Event, error) {
	if s.raw == nil {
		return s.ev, nil
	}
	var ev duroxide.Event
	if err := json.Unmarshal(s.raw, &ev); err != nil {
		return duroxide.Event{}, err
	}
	return ev, nil
}

// size returns the row's stored size in bytes (its JSON encoding).
func (s memStoredEvent) size() uint64 {
	if s.raw != nil {
		return uint64(len(s.raw))
	}
	b, err := json.Marshal(s.ev)
	if err != nil {
		return 0
	}
	return uint64(len(b))
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

// readHistory decodes one execution's history in event-id order; the
// caller holds p.mu.
func (p *MemoryProvider) readHistory(instance string, execution uint64) ([]duroxide.Event, error) {
	rows := p.history[instance][execution]
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

// checkAppend validates events for appending to one execution: every
// event id is set by the runtime (non-zero) and unique in the execution.
// The caller holds p.mu.
func (p *MemoryProvider) checkAppend(instance string, execution uint64, events []duroxide.Event) error {
	seen := map[uint64]bool{}
	for _, r := range p.history[instance][execution] {
		seen[r.id] = true
	}
	for _, ev := range events {
		if ev.EventID == 0 {
			return fmt.Errorf("event_id must be set by runtime")
		}
		if ev.Kind == nil {
			return fmt.Errorf("event %d has no kind", ev.EventID)
		}
		if seen[ev.EventID] {
			return fmt.Errorf("duplicate event_id %d for instance '%s' execution %d", ev.EventID, instance, execution)
		}
		seen[ev.EventID] = true
	}
	return nil
}

// appendHistory stores events checked by checkAppend; the caller holds p.mu.
func (p *MemoryProvider) appendHistory(instance string, execution uint64, events []duroxide.Event) {
	if len(events) == 0 {
		return
	}
	byExec := p.history[instance]
	if byExec == nil {
		byExec = map[uint64][]memStoredEvent{}
		p.history[instance] = byExec
	}
	rows := byExec[execution]
	for _, ev := range events {
		rows = append(rows, memStoredEvent{id: ev.EventID, ev: ev})
	}
	slices.SortStableFunc(rows, func(a, b memStoredEvent) int { return cmp.Compare(a.id, b.id) })
	byExec[execution] = rows
}

// Read returns the latest execution's history (duroxide's read); an
// undecodable event is a permanent error.
func (p *MemoryProvider) Read(ctx context.Context, instance string) ([]duroxide.Event, error) {
	if err := memCtxErr("read", ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	events, err := p.readHistory(instance, p.latestExecution(instance))
	if err != nil {
		return nil, duroxide.WrapError("read", false, err)
	}
	return events, nil
}

// ReadWithExecution returns one execution's history, empty when it does not
// exist.
func (p *MemoryProvider) ReadWithExecution(ctx context.Context, instance string, executionID uint64) ([]duroxide.Event, error) {
	if err := memCtxErr("read_with_execution", ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	events, err := p.readHistory(instance, executionID)
	if err != nil {
		return nil, duroxide.WrapError("read_with_execution", false, err)
	}
	return events, nil
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
	if err := p.checkAppend(instance, executionID, events); err != nil {
		return memPermanent("append_with_execution", "Failed to append history: %v", err)
	}
	p.appendHistory(instance, executionID, events)
	return nil
}

// CorruptHistory replaces every stored history event of instance with data
// that cannot be decoded (the MemoryFactory's HistoryCorrupter hook).
func (p *MemoryProvider) CorruptHistory(instance string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, rows := range p.history[instance] {
		for i := range rows {
			rows[i].raw = []byte(`{"type":"UnknownEventFromTheFuture","event_id":` + fmt.Sprint(rows[i].id) + `,"garbage":`)
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
