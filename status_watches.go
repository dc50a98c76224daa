// Status watches: clients in this process waiting for an instance's status
// wake on this process's acks instead of polling.

package cdb

import (
	"sync"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// statusWatches holds the channels of the instances clients of this
// process wait on. An entry lives while someone watches and its instance
// has not changed, so memory is bounded by the waiting clients.
type statusWatches struct {
	mu sync.Mutex
	m  map[string]*statusWatch
}

type statusWatch struct {
	ch   chan struct{}
	refs int
	// customVersion is the custom status version the change feed last
	// showed for the instance (seen: it showed one).
	customVersion uint64
	seen          bool
}

// watch returns instance's channel and the function releasing it.
func (s *statusWatches) watch(instance string) (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*statusWatch{}
	}
	w := s.m[instance]
	if w == nil {
		w = &statusWatch{ch: make(chan struct{})}
		s.m[instance] = w
	}
	w.refs++
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			w.refs--
			if w.refs == 0 && s.m[instance] == w {
				delete(s.m, instance)
			}
		})
	}
}

// changed wakes every watcher of instance.
func (s *statusWatches) changed(instance string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.m[instance]; w != nil {
		close(w.ch)
		delete(s.m, instance)
	}
}

// observed wakes the watchers of instance when a copy of its instance
// document from the change feed (written by any process) shows a status
// other than Running, or a custom status version other than the one the
// feed showed before.
func (s *statusWatches) observed(instance, status string, customVersion uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.m[instance]
	if w == nil {
		return
	}
	if (status != "" && status != duroxide.StatusRunning) || (w.seen && w.customVersion != customVersion) {
		close(w.ch)
		delete(s.m, instance)
		return
	}
	w.seen, w.customVersion = true, customVersion
}

// WatchStatus implements duroxide.StatusWatcher: the channel closes when
// this Provider acks a turn of instance that completes, fails or continues
// it as new, or updates its custom status, or deletes it; with
// the change-feed reader also when the change feed shows another
// process's such change (see WatchesAllProcesses). Without the change feed,
// changes made by other processes do not close it; the runtime's client
// keeps a capped backoff poll for them. Memory: one small entry per watched
// instance, released by stop or by the change.
func (p *Provider) WatchStatus(instance string) (changed <-chan struct{}, stop func()) {
	return p.statusWatches.watch(instance)
}

// WatchesAllProcesses implements duroxide.AllProcessesStatusWatcher: true
// while the change-feed reader (Config.DisableChangeFeedWakeups) runs, whose
// copies of instance documents close the watches of other processes'
// status changes too.
func (p *Provider) WatchesAllProcesses() bool { return p.feed != nil }

var _ duroxide.AllProcessesStatusWatcher = (*Provider)(nil)

// statusChanging reports whether a turn changes what a status wait looks
// at: a status other than Running, or a custom status update.
func statusChanging(metadata duroxide.ExecutionMetadata, delta []duroxide.Event) bool {
	if metadata.Status != nil && *metadata.Status != duroxide.StatusRunning {
		return true
	}
	for _, ev := range delta {
		if _, ok := ev.Kind.(duroxide.CustomStatusUpdated); ok {
			return true
		}
	}
	return false
}
