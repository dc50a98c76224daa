package runtimetest

// The replayer: recorded histories against the current registry, with the
// runtime's replay engine.

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// Failure is a history that did not replay.
type Failure struct {
	// Source and InstanceID say which history: see History.
	Source, InstanceID string
	// Err is why: a *runtime.NondeterminismError when the code no longer
	// reproduces the history, otherwise an error wrapping
	// runtime.ErrNotRegistered, runtime.ErrMalformedHistory or the
	// replay's own failure.
	Err error
}

// Error names the history and says why it did not replay.
func (f Failure) Error() string {
	if f.Source == "" || f.Source == "provider" {
		return f.Err.Error()
	}
	return f.Source + ": " + f.Err.Error()
}

// Unwrap returns Err.
func (f Failure) Unwrap() error { return f.Err }

// ReplayError is Replay's error: every history that did not replay, in
// the order given. errors.As finds a *runtime.NondeterminismError in it
// (the first one).
type ReplayError struct {
	// Replayed is how many histories were replayed, failed ones included.
	Replayed int
	// Failures are the histories that did not replay.
	Failures []Failure
}

// Error says how many histories did not replay, then each on a line.
func (e *ReplayError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d histories do not replay:", len(e.Failures), e.Replayed)
	for _, f := range e.Failures {
		b.WriteString("\n\t")
		b.WriteString(f.Error())
	}
	return b.String()
}

// Unwrap returns the failures, for errors.Is and errors.As.
func (e *ReplayError) Unwrap() []error {
	out := make([]error, len(e.Failures))
	for i, f := range e.Failures {
		out[i] = f
	}
	return out
}

// Replay replays each history against reg (runtime.Registry.Replay, the
// runtime's own replay engine) and returns nil when all of them replay,
// otherwise a *ReplayError listing those that do not. reg is only read;
// histories may be replayed from several goroutines at once.
func Replay(reg *runtime.Registry, histories ...History) error {
	rerr := &ReplayError{Replayed: len(histories)}
	for _, h := range histories {
		if err := reg.Replay(h.InstanceID, h.Events()); err != nil {
			rerr.Failures = append(rerr.Failures, Failure{Source: h.Source, InstanceID: h.InstanceID, Err: err})
		}
	}
	if len(rerr.Failures) == 0 {
		return nil
	}
	return rerr
}

// ReplayDir replays every history file of dir (ReadDir) against reg and
// reports each one that no longer replays as an error of t, with the
// instance, the event, what history recorded and what the code does now,
// and the history around that event. It stops the test (t.Fatal) when dir
// cannot be read or holds no history.
func ReplayDir(t testing.TB, reg *runtime.Registry, dir string) {
	t.Helper()
	histories, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	reportReplay(t, reg, histories)
}

// ReplayFile is ReplayDir for one history file (ReadFile).
func ReplayFile(t testing.TB, reg *runtime.Registry, path string) {
	t.Helper()
	h, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	reportReplay(t, reg, []History{h})
}

// ReplayProvider is ReplayDir for the histories of p (ReadProvider: the
// instances named, or every instance).
func ReplayProvider(t testing.TB, reg *runtime.Registry, p duroxide.Provider, instances ...string) {
	t.Helper()
	histories, err := ReadProvider(t.Context(), p, instances...)
	if err != nil {
		t.Fatal(err)
	}
	if len(histories) == 0 {
		t.Fatal("runtimetest: the provider holds no instance to replay")
	}
	reportReplay(t, reg, histories)
}

// reportReplay replays histories and reports each failure on t.
func reportReplay(t testing.TB, reg *runtime.Registry, histories []History) {
	t.Helper()
	err := Replay(reg, histories...)
	var rerr *ReplayError
	if !errors.As(err, &rerr) {
		if err != nil {
			t.Error(err)
		}
		return
	}
	byInstance := map[string]History{}
	for _, h := range histories {
		byInstance[h.Source+"\x00"+h.InstanceID] = h
	}
	for _, f := range rerr.Failures {
		var nd *runtime.NondeterminismError
		if !errors.As(f.Err, &nd) {
			t.Error(f.Error())
			continue
		}
		h := byInstance[f.Source+"\x00"+f.InstanceID]
		events := h.Events()
		for _, x := range h.Executions {
			if x.ExecutionID == nd.ExecutionID {
				events = x.Events
			}
		}
		t.Errorf("%s\n%s", f.Error(), FormatHistory(events, nd.EventIndex))
	}
}
