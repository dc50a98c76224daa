package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// MemoryOptions configures a MemoryProvider. The zero value is ready to use.
type MemoryOptions struct {
	// Now is the clock every visibility, lock and session time is read
	// from; nil means time.Now. Long polls still wait in real time.
	Now func() time.Time
}

// MemoryProvider is the reference in-memory duroxide.Provider and
// duroxide.ProviderAdmin: a set of mutex-guarded maps that mirror the tables
// of duroxide's SQLite provider (src/providers/sqlite.rs, the reference
// implementation; microsoft/duroxide docs/sqlite-provider-design.md), so that the validation
// suite can be checked before any Cosmos DB behaviour enters, and so that
// runtime tests have a fast provider. Every method runs under one mutex, so
// every operation is atomic; fetches long-poll for up to their poll timeout.
//
// A MemoryProvider holds no goroutines and needs no Close. It is safe for
// concurrent use.
type MemoryProvider struct {
	now    func() time.Time
	prefix string // random per provider, so lock tokens never repeat

	mu sync.Mutex
	// changed is closed (and replaced) whenever queued work may have
	// become available, waking long polls.
	changed chan struct{}
	seq     uint64 // last queue-row id and token counter

	instances  map[string]*memInstance
	executions map[string]map[uint64]*memExecution
	history    map[string]map[uint64]*memHistory
	orchQueue  []*memOrchRow
	workQueue  []*memWorkRow
	locks      map[string]*memInstanceLock // by instance id
	sessions   map[string]*memSessionRow   // by session id
	kvStore    map[string]map[string]duroxide.KvEntry
	kvDelta    map[string]map[string]memKVDeltaRow
	pending    map[string]*memPending // memory_pending.go
}

// memInstance is one row of SQLite's instances table.
type memInstance struct {
	name                string
	version             *string // nil: NULL (reported as "unknown")
	currentExecution    uint64
	customStatus        *string
	customStatusVersion uint64
	createdAt           uint64 // ms since the Unix epoch
	updatedAt           uint64
	parent              *string
	seq                 uint64 // creation order
}

// memExecution is one row of SQLite's executions table.
type memExecution struct {
	status      string
	output      *string
	pinned      *duroxide.Version // nil: NULL, always compatible
	startedAt   uint64
	completedAt *uint64
}

// memOrchRow is one orchestrator-queue message. lockToken tags it with the
// fetch that locked its instance; it stays set after abandon, as in SQLite,
// and the next fetch re-tags every visible message.
type memOrchRow struct {
	id        uint64
	instance  string
	item      duroxide.WorkItem // private copy, for routing
	data      []byte            // the stored JSON; fetches return fresh decodes
	visibleAt int64             // ms
	lockToken string
	attempts  uint32
}

// memWorkRow is one worker-queue message with its own peek-lock.
type memWorkRow struct {
	id          uint64
	item        duroxide.ActivityExecuteItem // private copy, for routing
	data        []byte                       // the stored JSON; fetches return fresh decodes
	visibleAt   int64
	lockToken   string // "" when unlocked
	lockedUntil int64
	attempts    uint32
}

// memInstanceLock is one row of SQLite's instance_locks table.
type memInstanceLock struct {
	token       string
	lockedUntil int64
}

// memSessionRow is one row of SQLite's sessions table.
type memSessionRow struct {
	owner          string
	lockedUntil    int64
	lastActivityAt int64
}

// memKVDeltaRow is one current-execution KV mutation; a nil value is a
// tombstone.
type memKVDeltaRow struct {
	value           *string
	lastUpdatedAtMs uint64
}

// NewMemoryProvider returns an empty in-memory provider.
func NewMemoryProvider(opts MemoryOptions) *MemoryProvider {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return &MemoryProvider{
		now:        now,
		prefix:     hex.EncodeToString(b[:]),
		changed:    make(chan struct{}),
		instances:  map[string]*memInstance{},
		executions: map[string]map[uint64]*memExecution{},
		history:    map[string]map[uint64]*memHistory{},
		locks:      map[string]*memInstanceLock{},
		sessions:   map[string]*memSessionRow{},
		kvStore:    map[string]map[string]duroxide.KvEntry{},
		kvDelta:    map[string]map[string]memKVDeltaRow{},
		pending:    map[string]*memPending{},
	}
}

// Compile-time checks of the contracts MemoryProvider keeps.
var (
	_ duroxide.Provider      = (*MemoryProvider)(nil)
	_ duroxide.ProviderAdmin = (*MemoryProvider)(nil)
)

// Name returns "memory".
func (p *MemoryProvider) Name() string { return "memory" }

// Version returns the duroxide version whose contract the provider keeps.
func (p *MemoryProvider) Version() string { return duroxide.DuroxideVersion }

// nowMs returns the provider clock in milliseconds since the Unix epoch.
func (p *MemoryProvider) nowMs() int64 { return p.now().UnixMilli() }

// memAfter returns now + d in milliseconds, saturating instead of overflowing.
func memAfter(now int64, d time.Duration) int64 {
	ms := d.Milliseconds()
	if ms > 0 && now > (1<<63-1)-ms {
		return 1<<63 - 1
	}
	return now + ms
}

// nextID returns the next row id; the caller holds p.mu.
func (p *MemoryProvider) nextID() uint64 {
	p.seq++
	return p.seq
}

// newToken returns a lock token unique to this provider; the caller holds
// p.mu.
func (p *MemoryProvider) newToken() string {
	return fmt.Sprintf("lock-%s-%d", p.prefix, p.nextID())
}

// signal wakes every long poll; the caller holds p.mu.
func (p *MemoryProvider) signal() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// lockFor returns the instance id whose lock carries token, or "" when
// none does; the caller holds p.mu.
func (p *MemoryProvider) lockFor(token string) (string, *memInstanceLock) {
	for id, l := range p.locks {
		if l.token == token {
			return id, l
		}
	}
	return "", nil
}

// memCtxErr converts a cancelled context into a retryable ProviderError.
func memCtxErr(op string, ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return duroxide.WrapError(op, true, err)
	}
	return nil
}

// memPermanent returns a permanent ProviderError for op with a formatted
// message.
func memPermanent(op, format string, args ...any) error {
	return duroxide.NewPermanentError(op, fmt.Sprintf(format, args...))
}

// memPermanentCause returns a permanent ProviderError for op whose message
// is prefix followed by cause's text and whose Cause is cause, so that
// errors.As and errors.Is reach it.
func memPermanentCause(op, prefix string, cause error) error {
	pe := duroxide.WrapError(op, false, cause)
	pe.Message = prefix + pe.Message
	return pe
}

func memClone[T any](v *T) *T {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

// memDeleteRows removes, in place and keeping order, the rows match
// selects, and returns the remaining rows and how many it removed.
func memDeleteRows[T any](rows []*T, match func(*T) bool) ([]*T, int) {
	n := len(rows)
	rows = slices.DeleteFunc(rows, match)
	return rows, n - len(rows)
}
