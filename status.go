// Status reads: GetCustomStatus and GetInstanceStats.

package cdb

import (
	"context"
	"encoding/json"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
)

// GetCustomStatus returns the instance's custom status and its version when
// the version is greater than lastSeenVersion, and nil when it has not
// changed or the instance does not exist (DESIGN.md §6.7). The
// status comes from the last CustomStatusUpdated event an ack committed.
// Requests: 1 point read.
func (p *Provider) GetCustomStatus(ctx context.Context, instance string, lastSeenVersion uint64) (*duroxide.CustomStatus, error) {
	ctx = cosmos.WithCall(ctx, "get_custom_status")
	const op = "get_custom_status"
	doc, err := p.loadInstance(ctx, op, instance)
	if err != nil {
		return nil, err
	}
	if !doc.exists() || doc.CustomStatusVersion <= lastSeenVersion {
		return nil, nil
	}
	return &duroxide.CustomStatus{Status: doc.CustomStatus, Version: doc.CustomStatusVersion}, nil
}

// GetInstanceStats returns the size of the instance's stored state: its
// current execution's history (event count and JSON bytes), the queue
// messages its OrchestrationStarted carried forward from the previous
// execution (duroxide's queue_pending_count) and its KV values (the delta
// over the store, tombstones excluded); nil for an unknown instance.
// Requests: 2 (a point read of the instance document, one single-partition
// query, more pages of results for megabytes of history or KV).
func (p *Provider) GetInstanceStats(ctx context.Context, instance string) (*duroxide.SystemStats, error) {
	ctx = cosmos.WithCall(ctx, "get_instance_stats")
	const op = "get_instance_stats"
	doc, err := p.loadInstance(ctx, op, instance)
	if err != nil || !doc.exists() {
		return nil, err
	}
	raws, err := p.query(ctx, &instance,
		"SELECT * FROM c WHERE c.type = 'kv' OR (c.type = 'history' AND c.executionId = @e AND c.eventId <= @w)",
		[]azcosmos.QueryParameter{param("@e", doc.CurrentExecutionID), param("@w", doc.HistoryWatermark)}, queryOpts{pageSize: -1})
	if err != nil {
		return nil, mapError(op, err)
	}
	st, err := parseState(raws)
	if err != nil {
		return nil, mapError(op, err)
	}
	stats := &duroxide.SystemStats{}
	for _, h := range st.history {
		stats.HistoryEventCount++
		stats.HistorySizeBytes += uint64(len(h.EventData))
		if h.EventID == duroxide.InitialEventID {
			var ev duroxide.Event
			if json.Unmarshal([]byte(h.EventData), &ev) == nil {
				if s, ok := ev.Kind.(duroxide.OrchestrationStarted); ok {
					stats.QueuePendingCount = uint64(len(s.CarryForwardEvents))
				}
			}
		}
	}
	for _, v := range kvView(st.kv) {
		stats.KVUserKeyCount++
		stats.KVTotalValueBytes += uint64(len(v))
	}
	return stats, nil
}
