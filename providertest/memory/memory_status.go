package memory

import (
	"context"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// GetCustomStatus returns the instance's custom status and its version when
// the version is greater than lastSeenVersion; nil when it has not changed
// or the instance does not exist.
func (p *MemoryProvider) GetCustomStatus(ctx context.Context, instance string, lastSeenVersion uint64) (*duroxide.CustomStatus, error) {
	if err := memCtxErr("get_custom_status", ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	inst := p.instances[instance]
	if inst == nil || inst.customStatusVersion <= lastSeenVersion {
		return nil, nil
	}
	return &duroxide.CustomStatus{Status: memClone(inst.customStatus), Version: inst.customStatusVersion}, nil
}

// GetInstanceStatus implements duroxide.InstanceStatusReader:
// GetInstanceInfo's answer and GetCustomStatus(ctx, instance, 0)'s.
func (p *MemoryProvider) GetInstanceStatus(ctx context.Context, instance string) (duroxide.InstanceInfo, *duroxide.CustomStatus, error) {
	info, err := p.GetInstanceInfo(ctx, instance)
	if err != nil {
		return info, nil, err
	}
	cs, err := p.GetCustomStatus(ctx, instance, 0)
	return info, cs, err
}

// GetInstanceStats returns the size of the instance's stored state: its
// current execution's history (count and JSON bytes), the queue messages
// its OrchestrationStarted carried forward from the previous execution
// (duroxide's queue_pending_count), and its KV values (count and bytes,
// delta included, tombstones excluded); nil when the instance has no
// record.
func (p *MemoryProvider) GetInstanceStats(ctx context.Context, instance string) (*duroxide.SystemStats, error) {
	if err := memCtxErr("get_instance_stats", ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	inst := p.instances[instance]
	if inst == nil {
		return nil, nil
	}
	stats := &duroxide.SystemStats{}
	for i, r := range p.history[instance][inst.currentExecution].all() {
		stats.HistoryEventCount++
		stats.HistorySizeBytes += uint64(len(r.data))
		if i == 0 {
			if ev, err := r.decode(); err == nil {
				if s, ok := ev.Kind.(duroxide.OrchestrationStarted); ok {
					stats.QueuePendingCount = uint64(len(s.CarryForwardEvents))
				}
			}
		}
	}
	for _, v := range p.kvView(instance) {
		stats.KVUserKeyCount++
		stats.KVTotalValueBytes += uint64(len(v))
	}
	return stats, nil
}
