package runtime

import (
	"bytes"
	"container/list"
	"encoding/json"
	"sync"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// The sticky cache (Temporal's sticky executions): after a turn that
// leaves an execution running, the runtime keeps the execution suspended
// (its orchestration goroutine parked at its await points, its replay
// state) together with what it has consumed, so that the instance's next
// turn on this runtime resumes it with only the turn's new events instead
// of replaying the history from its first event; N sequential activities
// then cost O(N) turns of O(1) work each instead of O(N²).
//
// Nothing is trusted: a cached execution is resumed only when the fetched
// item's history is exactly what it consumed (same execution, same length,
// the events its last turn appended unchanged, the same KV seed), and the
// orchestration resolves to the same name and version in an unchanged
// registry. Anything else (another process ran a turn, a lost lock or an
// abandoned turn, a continue-as-new, a version or registry change, a KV
// store changed behind it) discards the entry and the turn replays in full.
// The new events of a resumed turn go through the same checks as in a full
// replay (matched against the actions the resumed code emits), so
// nondeterminism is detected the same way.

// Defaults of the sticky cache bounds (Options.StickyCacheSize and
// Options.StickyCacheBytes).
const (
	defaultStickyCacheSize  = 1000
	defaultStickyCacheBytes = 128 << 20
	// stickyEntryOverhead is the estimated memory of a cached execution
	// beyond its history's payloads: the parked goroutine's stack, the
	// replay state's maps, the entry.
	stickyEntryOverhead = 8 << 10
	// stickyEventOverhead is the estimated memory of one consumed event
	// beyond its payload strings (its share of the replay state).
	stickyEventOverhead = 96
)

// Miss and eviction reasons, the reason label of the sticky cache metrics.
const (
	stickyMissNotCached = "not_cached" // no entry: first turn here, evicted, or another process had it
	stickyMissHistory   = "history"    // the history is not what the entry consumed
	stickyMissExecution = "execution"  // another execution (continue-as-new)
	stickyMissVersion   = "version"    // another orchestration name or version
	stickyMissRegistry  = "registry"   // the registry changed since
	stickyMissKV        = "kv"         // the KV snapshot is not the one the execution was seeded with

	stickyEvictSize     = "size"        // over StickyCacheSize
	stickyEvictBytes    = "bytes"       // over StickyCacheBytes
	stickyEvictShutdown = "shutdown"    // the runtime shut down
	stickyEvictFailed   = "turn_failed" // the turn that produced it was not committed
)

// stickyEntry is one suspended execution: the replay state after a
// committed (or about to be committed) turn and what it consumed.
type stickyEntry struct {
	instance    string
	executionID uint64
	name        string
	version     string
	registryGen uint64

	// historyLen is the length of the history the execution has consumed
	// (the persisted history plus the turn's delta); tail is the end of it
	// as this runtime wrote it (the last turn's delta), lastJSON the JSON
	// of the last event: the fingerprint a fetched history must match.
	historyLen int
	tail       []eventMark
	lastJSON   []byte
	// kvSeed is the KV snapshot the execution's replay state was seeded
	// with; kvSetKeys the keys the execution set (see resumeKV).
	kvSeed    map[string]duroxide.KvEntry
	kvSetKeys map[string]bool

	run   *replayRun
	bytes int64
	elem  *list.Element
}

// eventMark is the cheap identity of a history event: ids, type and
// timestamp.
type eventMark struct {
	id, source, execution, timestamp uint64
	hasSource                        bool
	kind                             duroxide.EventType
}

func markOf(ev duroxide.Event) eventMark {
	m := eventMark{id: ev.EventID, execution: ev.ExecutionID, timestamp: ev.TimestampMs, kind: ev.Type()}
	if ev.SourceEventID != nil {
		m.source, m.hasSource = *ev.SourceEventID, true
	}
	return m
}

// release ends the entry's parked orchestration goroutine.
func (e *stickyEntry) release() { e.run.co.abort() }

// stickyCache holds the suspended executions of one runtime, at most one
// per instance, bounded by count and estimated bytes, least recently used
// evicted first. It is safe for concurrent use; an entry taken out of it
// belongs to the taker until it is put back or released.
type stickyCache struct {
	maxEntries int
	maxBytes   int64
	metrics    *runtimeMetrics

	mu      sync.Mutex
	entries map[string]*stickyEntry
	lru     list.List // front: most recently used
	bytes   int64
	closed  bool
}

// newStickyCache returns a cache bounded by maxEntries and maxBytes, or nil
// (no cache) when maxEntries is negative.
func newStickyCache(maxEntries int, maxBytes int64, m *runtimeMetrics) *stickyCache {
	if maxEntries < 0 {
		return nil
	}
	return &stickyCache{maxEntries: maxEntries, maxBytes: maxBytes, metrics: m, entries: map[string]*stickyEntry{}}
}

// take removes and returns instance's entry, or nil.
func (c *stickyCache) take(instance string) *stickyEntry {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[instance]
	if e != nil {
		c.removeLocked(e)
	}
	return e
}

func (c *stickyCache) removeLocked(e *stickyEntry) {
	delete(c.entries, e.instance)
	c.lru.Remove(e.elem)
	e.elem = nil
	c.bytes -= e.bytes
}

// put caches e (replacing an older entry of its instance) and evicts the
// least recently used entries past the bounds; on a closed cache, or when e
// alone is over the bounds, e is released at once.
func (c *stickyCache) put(e *stickyEntry) {
	var evicted []*stickyEntry
	var reasons []string
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		e.release()
		return
	}
	if old := c.entries[e.instance]; old != nil {
		c.removeLocked(old)
		evicted, reasons = append(evicted, old), append(reasons, stickyEvictSize)
	}
	c.entries[e.instance] = e
	e.elem = c.lru.PushFront(e)
	c.bytes += e.bytes
	for len(c.entries) > c.maxEntries || (c.bytes > c.maxBytes && len(c.entries) > 0) {
		reason := stickyEvictBytes
		if len(c.entries) > c.maxEntries {
			reason = stickyEvictSize
		}
		victim := c.lru.Back().Value.(*stickyEntry)
		c.removeLocked(victim)
		evicted, reasons = append(evicted, victim), append(reasons, reason)
	}
	c.mu.Unlock()
	for i, v := range evicted {
		v.release()
		c.metrics.stickyEvicted(reasons[i])
	}
}

// discard releases instance's entry, if any, counting an eviction for
// reason.
func (c *stickyCache) discard(instance, reason string) {
	if c == nil {
		return
	}
	if e := c.take(instance); e != nil {
		e.release()
		c.metrics.stickyEvicted(reason)
	}
}

// close releases every entry and makes later puts release theirs: the
// runtime is shutting down.
func (c *stickyCache) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.closed = true
	all := make([]*stickyEntry, 0, len(c.entries))
	for _, e := range c.entries {
		all = append(all, e)
	}
	clear(c.entries)
	c.lru.Init()
	c.bytes = 0
	c.mu.Unlock()
	for _, e := range all {
		e.release()
		c.metrics.stickyEvicted(stickyEvictShutdown)
	}
}

// len returns the number of cached executions.
func (c *stickyCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// has reports whether instance has a cached execution.
func (c *stickyCache) has(instance string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[instance] != nil
}

// stickyResume is what a turn needs to resume a cached execution, or to
// cache the one it ran: the entry taken from the cache (nil on a miss) and
// the identity of the turn.
type stickyResume struct {
	entry       *stickyEntry
	name        string
	version     string
	registryGen uint64
	kvSeed      map[string]duroxide.KvEntry
}

// missReason checks entry against the fetched item's history, execution,
// orchestration and KV snapshot and says why it cannot be resumed ("" when
// it can).
func (e *stickyEntry) missReason(history []duroxide.Event, executionID uint64, name, version string, registryGen uint64, kv map[string]duroxide.KvEntry) string {
	switch {
	case e.executionID != executionID:
		return stickyMissExecution
	case e.name != name || e.version != version:
		return stickyMissVersion
	case e.registryGen != registryGen:
		return stickyMissRegistry
	case !e.historyMatches(history):
		return stickyMissHistory
	case !sameKV(e.kvSeed, kv):
		return stickyMissKV
	}
	return ""
}

// historyMatches reports whether history is exactly what the entry
// consumed: the same length, the marks of the last turn's events, and the
// last event byte for byte.
func (e *stickyEntry) historyMatches(history []duroxide.Event) bool {
	if len(history) != e.historyLen || len(history) < len(e.tail) || len(history) == 0 {
		return false
	}
	base := len(history) - len(e.tail)
	for i, m := range e.tail {
		if markOf(history[base+i]) != m {
			return false
		}
	}
	last, err := json.Marshal(history[len(history)-1])
	return err == nil && bytes.Equal(last, e.lastJSON)
}

func sameKV(a, b map[string]duroxide.KvEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// newStickyEntry builds the entry of an execution that consumed history
// (the persisted history followed by the turn's delta) through run, or
// returns nil when its fingerprint cannot be taken. prev is the entry the
// turn resumed (nil after a full replay): its set keys and size carry
// over, and only delta is scanned.
func newStickyEntry(instance string, executionID uint64, s stickyResume, run *replayRun, persisted, delta []duroxide.Event, prev *stickyEntry) *stickyEntry {
	n := len(persisted) + len(delta)
	if n == 0 {
		return nil
	}
	last := delta
	if len(last) == 0 {
		last = persisted
	}
	lastJSON, err := json.Marshal(last[len(last)-1])
	if err != nil {
		return nil
	}
	e := &stickyEntry{
		instance: instance, executionID: executionID, name: s.name, version: s.version, registryGen: s.registryGen,
		historyLen: n, lastJSON: lastJSON, kvSeed: s.kvSeed, run: run,
	}
	e.tail = make([]eventMark, len(delta))
	for i, ev := range delta {
		e.tail[i] = markOf(ev)
	}
	if prev != nil {
		e.kvSetKeys, e.bytes = prev.kvSetKeys, prev.bytes
	} else {
		e.kvSetKeys, e.bytes = map[string]bool{}, stickyEntryOverhead
		e.consume(persisted)
	}
	e.consume(delta)
	return e
}

// consume adds events to the entry's size and set keys.
func (e *stickyEntry) consume(events []duroxide.Event) {
	for _, ev := range events {
		e.bytes += approxEventBytes(ev)
		if k, ok := ev.Kind.(duroxide.KeyValueSet); ok {
			e.kvSetKeys[k.Key] = true
		}
	}
}

// approxEventBytes estimates the memory an event's payload keeps alive in
// a suspended execution: a fixed share plus its strings.
func approxEventBytes(ev duroxide.Event) int64 {
	n := stickyEventOverhead
	switch k := ev.Kind.(type) {
	case duroxide.OrchestrationStarted:
		n += len(k.Input) + len(k.Name)
		for _, c := range k.CarryForwardEvents {
			n += len(c.Name) + len(c.Data)
		}
	case duroxide.ActivityScheduled:
		n += len(k.Name) + len(k.Input)
	case duroxide.ActivityCompleted:
		n += len(k.Result)
	case duroxide.SubOrchestrationScheduled:
		n += len(k.Name) + len(k.Instance) + len(k.Input)
	case duroxide.SubOrchestrationCompleted:
		n += len(k.Result)
	case duroxide.ExternalEvent:
		n += len(k.Name) + len(k.Data)
	case duroxide.QueueEventDelivered:
		n += len(k.Name) + len(k.Data)
	case duroxide.KeyValueSet:
		n += len(k.Key) + len(k.Value)
	case duroxide.CustomStatusUpdated:
		if k.Status != nil {
			n += len(*k.Status)
		}
	case duroxide.OrchestrationChained:
		n += len(k.Name) + len(k.Instance) + len(k.Input)
	}
	return int64(n)
}
