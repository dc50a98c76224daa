// Package statuswatch wakes the status waits of a provider process
// (DESIGN.md §14): Watches holds a channel per watched instance, closed by
// this process's acks (Changed, when Changing says a turn changes what a
// wait looks at) and by the change feed's copies of instance documents
// (Observed); and Mirror decides which execution's status and output the
// instance document mirrors, so that a status read is one point read.
package statuswatch

import (
	"sync"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Watches holds the channels of the instances clients of this
// process wait on. An entry lives while someone watches and its instance
// has not changed, so memory is bounded by the waiting clients.
type Watches struct {
	mu sync.Mutex
	m  map[string]*watch
}

type watch struct {
	ch   chan struct{}
	refs int
	// customVersion is the custom status version the change feed last
	// showed for the instance (seen: it showed one).
	customVersion uint64
	seen          bool
}

// Watch returns instance's channel and the function releasing it.
func (s *Watches) Watch(instance string) (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*watch{}
	}
	w := s.m[instance]
	if w == nil {
		w = &watch{ch: make(chan struct{})}
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

// Changed wakes every watcher of instance.
func (s *Watches) Changed(instance string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.m[instance]; w != nil {
		close(w.ch)
		delete(s.m, instance)
	}
}

// Observed wakes the watchers of instance when a copy of its instance
// document from the change feed (written by any process) shows a status
// other than Running, or a custom status version other than the one the
// feed showed before. It reports whether someone watches instance (the
// copy concerns a client of this process).
func (s *Watches) Observed(instance, status string, customVersion uint64) (watched bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.m[instance]
	if w == nil {
		return false
	}
	if (status != "" && status != duroxide.StatusRunning) || (w.seen && w.customVersion != customVersion) {
		close(w.ch)
		delete(s.m, instance)
		return true
	}
	w.seen, w.customVersion = true, customVersion
	return true
}

// MaxMirroredOutputBytes bounds the terminal output an ack copies onto the
// instance document (bytes): a larger output stays on the execution
// document only, so that it neither doubles the size of the ack's batch
// nor of every later read of the instance document; GetInstanceInfo then
// reads the execution document.
const MaxMirroredOutputBytes = 16 << 10

// Mirror decides what the instance document an ack writes mirrors of
// execution executionID, whose document the same batch leaves with status
// and output: the instance document's status docStatus (as the ack writes
// it) mirrors that execution when it is that status (it is, except when
// the execution document was missing) and the output is small enough; it
// then returns executionID and output, otherwise 0 and nil (the instance
// document mirrors no execution). known is false when the execution's
// status is not known without a read (an ack that leaves the status alone,
// on an instance document that did not mirror it). A running execution's
// output is nil by duroxide's contract (duroxide.InstanceInfo), so a
// Running status is mirrored whatever the output's size.
func Mirror(docStatus string, executionID uint64, status string, output *string, known bool) (uint64, *string) {
	if !known || docStatus != status {
		return 0, nil
	}
	if status != duroxide.StatusRunning && output != nil && len(*output) > MaxMirroredOutputBytes {
		return 0, nil
	}
	return executionID, output
}

// Changing reports whether a turn changes what a status wait looks
// at: a status other than Running, or a custom status update.
func Changing(metadata duroxide.ExecutionMetadata, delta []duroxide.Event) bool {
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
