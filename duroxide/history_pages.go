package duroxide

import "context"

// HistoryPageReader is an optional capability of a ProviderAdmin: one
// execution's history read a range of event ids at a time, with the
// execution's metadata, so that showing a page of a long history costs
// about what the page holds, not the whole history (ReadHistoryWithExecutionID
// reads every event). A dashboard finds it with a type assertion. It is a
// Go addition to duroxide's contract.
//
// Event ids number an execution's events from 1 (InitialEventID), one
// after the other, so the events with ids in [first, first+n) are the n
// events from the first-th on; a history written by hand with gaps
// (AppendWithExecution) has fewer events in some ranges.
type HistoryPageReader interface {
	// ReadHistoryPage returns the committed events of execution whose
	// event ids are in [first, first+count), in event-id order, with the
	// execution's metadata (ExecutionInfo; EventCount is the id of its last
	// committed event). An execution that does not exist is a permanent
	// *ProviderError; count must be positive.
	ReadHistoryPage(ctx context.Context, instance string, execution, first uint64, count int) (HistoryPage, error)
	// ReadHistoryEvents returns the committed events of execution with
	// the given ids (at most MaxHistoryEventsRead; the ids that name no
	// committed event are left out), in event-id order.
	ReadHistoryEvents(ctx context.Context, instance string, execution uint64, ids []uint64) ([]Event, error)
}

// MaxHistoryEventsRead is the most ids one ReadHistoryEvents call takes;
// more is a permanent error.
const MaxHistoryEventsRead = 500

// HistoryPage is one range of an execution's history.
type HistoryPage struct {
	// Events are the page's committed events, in event-id order.
	Events []Event
	// Execution is the execution's metadata.
	Execution ExecutionInfo
}
