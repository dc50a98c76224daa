// History: reading an instance's history (Read, ReadWithExecution, the
// turn's history at fetch) and appending to it (AppendWithExecution).

package cdb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/fetchtrace"
	"go.uber.org/zap"
)

// Read returns the current execution's history, ordered by event id
// (DESIGN.md §3.11); an unknown instance has an empty history.
// Events above the execution's watermark (staged by an ack that has not
// committed) are not returned. Requests: 2 (a point read of the instance
// document, a single-partition history query); 1 for an unknown instance.
// Undecodable history is a permanent error.
func (p *Provider) Read(ctx context.Context, instance string) ([]duroxide.Event, error) {
	ctx = cosmos.WithCall(ctx, "read")
	const op = "read"
	doc, err := p.loadInstance(ctx, op, instance)
	if err != nil {
		return nil, err
	}
	if doc == nil {
		return []duroxide.Event{}, nil
	}
	events, err := p.readHistory(ctx, instance, doc.CurrentExecutionID, doc.HistoryWatermark)
	if err != nil {
		return nil, historyError(op, err)
	}
	return events, nil
}

// historyError maps a history read failure: undecodable data is permanent.
func historyError(op string, err error) error {
	if isDecodeError(err) {
		return permanent(op, err.Error())
	}
	return mapError(op, err)
}

// ReadWithExecution returns one execution's history (empty when it does
// not exist). Requests: 1 single-partition query (the execution document,
// for its watermark, and its history).
func (p *Provider) ReadWithExecution(ctx context.Context, instance string, executionID uint64) ([]duroxide.Event, error) {
	ctx = cosmos.WithCall(ctx, "read_with_execution")
	const op = "read_with_execution"
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	raws, err := p.query(ctx, &instance, "SELECT * FROM c WHERE c.executionId = @e AND c.type IN ('history', 'execution')",
		[]azcosmos.QueryParameter{param("@e", executionID)}, queryOpts{})
	if err != nil {
		return nil, mapError(op, err)
	}
	st, err := parseState(raws)
	if err != nil {
		return nil, mapError(op, err)
	}
	ex := st.execution(executionID)
	if ex == nil {
		return []duroxide.Event{}, nil
	}
	events, err := decodeHistory(instance, executionID, ex.Watermark, st.history)
	if err != nil {
		return nil, permanent(op, err.Error())
	}
	return events, nil
}

// AppendWithExecution appends events to an execution outside a turn
// (testing and tooling). Event ids must be set, unique, and above the
// execution's history watermark (the last event id it holds): an id at or
// below it is a duplicate, a permanent error with nothing written. The
// execution is created when missing, and an instance document that does
// not exist yet is created pending (not listed as an instance until an
// ack's metadata creates it), so that Read finds the history. Requests: 1
// query, then 1 transactional batch (more, staged, for more than about 95
// events).
func (p *Provider) AppendWithExecution(ctx context.Context, instance string, executionID uint64, events []duroxide.Event) error {
	ctx = cosmos.WithCall(ctx, "append_with_execution")
	const op = "append_with_execution"
	if err := validateInstanceID(op, instance); err != nil {
		return err
	}
	if executionID == 0 {
		return permanent(op, "execution id must be at least 1")
	}
	in, err := validateAck(op, instance, executionID, events, nil, nil, duroxide.ExecutionMetadata{}, nil)
	if err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	raws, err := p.query(ctx, &instance, "SELECT * FROM c WHERE c.type IN ('instance', 'instance_pending') OR (c.type = 'execution' AND c.executionId = @e)",
		[]azcosmos.QueryParameter{param("@e", executionID)}, queryOpts{})
	if err != nil {
		return mapError(op, err)
	}
	st, err := parseState(raws)
	if err != nil {
		return mapError(op, err)
	}
	now := p.nowMs()
	ex := st.execution(executionID)
	watermark := uint64(0)
	if ex != nil {
		watermark = ex.Watermark
	}
	maxEvent := watermark
	for _, ev := range events {
		if ev.EventID <= watermark {
			return permanent(op, fmt.Sprintf("Failed to append history: duplicate event_id %d for instance '%s' execution %d", ev.EventID, instance, executionID))
		}
		maxEvent = max(maxEvent, ev.EventID)
	}
	var fixed []batchOp
	if ex == nil {
		b, err := json.Marshal(executionDoc{ID: executionDocID(executionID), InstanceID: instance, Type: typeExecution, ExecutionID: executionID,
			Status: duroxide.StatusRunning, StartedAt: now, Watermark: maxEvent})
		if err != nil {
			return permanent(op, err.Error())
		}
		fixed = append(fixed, createOp(executionDocID(executionID), b))
	} else {
		var po azcosmos.PatchOperations
		po.AppendSet("/watermark", maxEvent)
		fixed = append(fixed, patchOp(ex.ID, po, ex.ETag))
	}
	switch {
	case st.inst == nil:
		b, err := json.Marshal(instanceDoc{ID: instanceDocID, InstanceID: instance, Type: typeInstancePending, DispatchSlot: int(DispatchSlot(instance)),
			CurrentExecutionID: executionID, HistoryWatermark: maxEvent, Status: duroxide.StatusRunning, CreatedAt: now, UpdatedAt: now})
		if err != nil {
			return permanent(op, err.Error())
		}
		fixed = append(fixed, createOp(instanceDocID, b))
	case executionID >= st.inst.CurrentExecutionID:
		var po azcosmos.PatchOperations
		po.AppendSet("/currentExecutionId", executionID)
		po.AppendSet("/historyWatermark", maxEvent)
		po.AppendSet("/updatedAt", now)
		fixed = append(fixed, patchOp(instanceDocID, po, st.inst.ETag))
	}
	var history []batchOp
	for i, ev := range events {
		b, err := json.Marshal(historyDoc{ID: historyDocID(executionID, ev.EventID), InstanceID: instance, Type: typeHistory,
			ExecutionID: executionID, EventID: ev.EventID, EventData: in.eventData[i]})
		if err != nil {
			return permanent(op, err.Error())
		}
		history = append(history, upsertOp(historyDocID(executionID, ev.EventID), b))
	}
	plan, err := planTurn(instance, newLockID(), "", now, fixed, nil, history)
	if err != nil {
		return permanent(op, err.Error())
	}
	p.heldStates.Drop(instance) // the instance document changes
	if _, err := p.commitTurn(ctx, instance, plan, stagedBatches{}); err != nil {
		if _, ok := asBatchFailure(err); ok {
			return retryable(op, "the execution changed concurrently: "+err.Error())
		}
		return mapError(op, err)
	}
	return nil
}

// turnHistory returns the current execution's history for a turn: from
// the documents read with the instance's state (folded, of execution
// folded) when they are that execution's and complete up to its watermark,
// and otherwise with 1 history query.
func (p *Provider) turnHistory(ctx context.Context, instance string, doc *instanceDoc, folded uint64, held []duroxide.Event, docs []historyDoc) ([]duroxide.Event, error) {
	exec, watermark := doc.CurrentExecutionID, doc.HistoryWatermark
	from := uint64(len(held))
	if exec == folded && from <= watermark && completeHistory(docs, from, watermark) {
		events, err := decodeHistory(instance, exec, watermark, docs)
		if err != nil {
			return nil, &decodeError{err}
		}
		if from == 0 {
			p.held.Put(instance, doc.RID, exec, events)
		} else {
			p.held.Extend(instance, doc.RID, exec, false, from, events)
		}
		if h, rid, e, ok := p.held.Peek(instance); ok && rid == doc.RID && e == exec && uint64(len(h)) == watermark {
			return h, nil
		}
		if from == 0 {
			n := len(events)
			return events[:n:n], nil
		}
		return append(held, events...), nil
	}
	if watermark > 0 {
		p.traceFetch(fetchtrace.OrchHistoryQuery)
	}
	events, err := p.readHistory(ctx, instance, exec, watermark)
	if err == nil {
		p.held.Put(instance, doc.RID, exec, events)
		n := len(events)
		events = events[:n:n]
	}
	return events, err
}

// completeHistory reports whether docs (one execution's) hold every event
// id from 1 to watermark: duroxide numbers an execution's events from 1
// without gaps, and each id has one document, so a read that raced a
// commit is caught by the count.
func completeHistory(docs []historyDoc, from, watermark uint64) bool {
	n := uint64(0)
	for _, d := range docs {
		if d.EventID > from && d.EventID <= watermark {
			n++
		}
	}
	return n == watermark-from
}

// sleepCtx waits d, or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// reachesWatermark reports whether history documents docs, read from one
// replica (one consistent prefix of the partition), hold the event at
// watermark: the commit that raised the watermark wrote it, with or after
// every event below, so a replica that has it has the rest (a history
// appended with gaps in its ids, which AppendWithExecution allows, passes
// too).
func reachesWatermark(docs []historyDoc, watermark uint64) bool {
	for _, d := range docs {
		if d.EventID == watermark {
			return true
		}
	}
	return false
}

// decodeError marks a history that could not be decoded.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }

func (e *decodeError) Unwrap() error { return e.err }

func isDecodeError(err error) bool {
	_, ok := err.(*decodeError)
	return ok
}

// staleHistoryRereads bounds how often readHistory reads a history again
// that is shorter than its watermark, and staleHistoryDelay is the wait
// before the first of them (doubling).
const (
	staleHistoryRereads = 4
	staleHistoryDelay   = 10 * time.Millisecond
)

// readHistory reads one execution's history up to watermark with one
// single-partition query (none when the watermark is 0). A decoding failure
// is a *decodeError. A history with fewer events than the watermark (from
// a replica that has not applied the turns the watermark counts: another
// process's instance document was read from a newer one, or the session
// token was not sent) is never returned: it is read again, up to
// staleHistoryRereads times, then a retryable error (DESIGN.md §16).
func (p *Provider) readHistory(ctx context.Context, instance string, executionID, watermark uint64) ([]duroxide.Event, error) {
	if executionID == 0 || watermark == 0 {
		return []duroxide.Event{}, nil
	}
	docs, err := p.queryHistory(ctx, instance, executionID, watermark)
	for try := 0; err == nil && !reachesWatermark(docs, watermark); try++ {
		if try == staleHistoryRereads {
			return nil, retryable("read_history", fmt.Sprintf("the history of instance %s execution %d read has fewer events than its watermark %d (a replica behind the primary); try again",
				duroxide.QuoteInstanceID(instance), executionID, watermark))
		}
		p.log.Debug("a history read is shorter than its watermark (a lagging replica); reading it again",
			zap.String("instance", instance), zap.Uint64("execution", executionID), zap.Uint64("watermark", watermark), zap.Int("events", len(docs)))
		if err := sleepCtx(ctx, staleHistoryDelay<<try); err != nil {
			return nil, err
		}
		docs, err = p.queryHistory(ctx, instance, executionID, watermark)
	}
	if err != nil {
		return nil, err
	}
	events, err := decodeHistory(instance, executionID, watermark, docs)
	if err != nil {
		return nil, &decodeError{err}
	}
	return events, nil
}

// queryHistory returns the history documents of one execution up to
// watermark, unsorted.
func (p *Provider) queryHistory(ctx context.Context, instance string, executionID, watermark uint64) ([]historyDoc, error) {
	raws, err := p.query(ctx, &instance,
		"SELECT * FROM c WHERE c.type = 'history' AND c.executionId = @e AND c.eventId <= @w",
		[]azcosmos.QueryParameter{param("@e", executionID), param("@w", watermark)}, queryOpts{pageSize: -1})
	if err != nil {
		return nil, err
	}
	docs := make([]historyDoc, 0, len(raws))
	for _, raw := range raws {
		var d historyDoc
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("decode history document: %w", err)
		}
		docs = append(docs, d)
	}
	return docs, nil
}

var _ duroxide.HistoryPageReader = (*Provider)(nil)

// ReadHistoryPage implements duroxide.HistoryPageReader: one
// single-partition query for the execution document and the history
// documents of the range (a request per 4 MB of results: usually 1).
func (p *Provider) ReadHistoryPage(ctx context.Context, instance string, execution, first uint64, count int) (duroxide.HistoryPage, error) {
	const op = "read_history_page"
	ctx = cosmos.WithCall(ctx, op)
	if err := validateInstanceID(op, instance); err != nil {
		return duroxide.HistoryPage{}, err
	}
	if count <= 0 {
		return duroxide.HistoryPage{}, permanent(op, fmt.Sprintf("count must be positive, not %d", count))
	}
	first = max(first, 1)
	st, err := p.historyDocs(ctx, op, instance, execution, "c.eventId >= @a AND c.eventId < @b",
		param("@a", first), param("@b", first+uint64(count)))
	if err != nil {
		return duroxide.HistoryPage{}, err
	}
	ex := st.execution(execution)
	if ex == nil {
		return duroxide.HistoryPage{}, permanent(op, fmt.Sprintf("Execution %d not found for instance %s", execution, instance))
	}
	events, err := decodeHistory(instance, execution, ex.Watermark, st.history)
	if err != nil {
		return duroxide.HistoryPage{}, permanent(op, err.Error())
	}
	info := duroxide.ExecutionInfo{ExecutionID: execution, Status: ex.Status, Output: ex.Output, StartedAt: uint64(max(ex.StartedAt, 0)), EventCount: ex.Watermark}
	if ex.CompletedAt != nil {
		info.CompletedAt = duroxide.Uint64Ptr(uint64(max(*ex.CompletedAt, 0)))
	}
	return duroxide.HistoryPage{Events: events, Execution: info}, nil
}

// ReadHistoryEvents implements duroxide.HistoryPageReader: one
// single-partition query for the execution document and the history
// documents with the ids (ARRAY_CONTAINS).
func (p *Provider) ReadHistoryEvents(ctx context.Context, instance string, execution uint64, ids []uint64) ([]duroxide.Event, error) {
	const op = "read_history_events"
	ctx = cosmos.WithCall(ctx, op)
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	if len(ids) > duroxide.MaxHistoryEventsRead {
		return nil, permanent(op, fmt.Sprintf("%d ids: at most %d a call", len(ids), duroxide.MaxHistoryEventsRead))
	}
	if len(ids) == 0 {
		return []duroxide.Event{}, nil
	}
	st, err := p.historyDocs(ctx, op, instance, execution, "ARRAY_CONTAINS(@ids, c.eventId)", param("@ids", ids))
	if err != nil {
		return nil, err
	}
	ex := st.execution(execution)
	if ex == nil {
		return []duroxide.Event{}, nil
	}
	events, err := decodeHistory(instance, execution, ex.Watermark, st.history)
	if err != nil {
		return nil, permanent(op, err.Error())
	}
	return events, nil
}

// historyDocs reads the execution document of execution and its history
// documents that match where (with params), in one query.
func (p *Provider) historyDocs(ctx context.Context, op, instance string, execution uint64, where string, params ...azcosmos.QueryParameter) (partitionState, error) {
	raws, err := p.query(ctx, &instance, "SELECT * FROM c WHERE c.executionId = @e AND (c.type = 'execution' OR (c.type = 'history' AND "+where+"))",
		append([]azcosmos.QueryParameter{param("@e", execution)}, params...), queryOpts{pageSize: -1})
	if err != nil {
		return partitionState{}, mapError(op, err)
	}
	st, err := parseState(raws)
	if err != nil {
		return partitionState{}, mapError(op, err)
	}
	return st, nil
}
