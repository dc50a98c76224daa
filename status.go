// Status reads: GetCustomStatus and GetInstanceStats.

package cdb

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// GetCustomStatus returns the instance's custom status and its version when
// the version is greater than lastSeenVersion, and nil when it has not
// changed or the instance does not exist (duroxide-cdb's spec §6.7). The
// status comes from the last CustomStatusUpdated event an ack committed.
// Requests: 1 point read.
func (p *Provider) GetCustomStatus(ctx context.Context, instance string, lastSeenVersion uint64) (*duroxide.CustomStatus, error) {
	ctx = withCall(ctx, "get_custom_status")
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
// current execution's history (event count and JSON bytes), its pending
// orchestrator-queue messages (locked or not) and its KV store (the
// current view); nil for an unknown instance. Requests: 2 (a point read of
// the instance document, one single-partition query).
func (p *Provider) GetInstanceStats(ctx context.Context, instance string) (*duroxide.SystemStats, error) {
	ctx = withCall(ctx, "get_instance_stats")
	const op = "get_instance_stats"
	doc, err := p.loadInstance(ctx, op, instance)
	if err != nil || !doc.exists() {
		return nil, err
	}
	raws, err := p.query(ctx, &instance,
		"SELECT * FROM c WHERE c.type IN ('orch_queue', 'kv') OR (c.type = 'history' AND c.executionId = @e AND c.eventId <= @w)",
		[]azcosmos.QueryParameter{param("@e", doc.CurrentExecutionID), param("@w", doc.HistoryWatermark)}, queryOpts{})
	if err != nil {
		return nil, mapError(op, err)
	}
	st, err := parseState(raws)
	if err != nil {
		return nil, mapError(op, err)
	}
	stats := &duroxide.SystemStats{QueuePendingCount: uint64(len(st.msgs))}
	for _, h := range st.history {
		stats.HistoryEventCount++
		stats.HistorySizeBytes += uint64(len(h.EventData))
	}
	for _, v := range kvView(st.kv) {
		stats.KVUserKeyCount++
		stats.KVTotalValueBytes += uint64(len(v))
	}
	return stats, nil
}
