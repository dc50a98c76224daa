package statuswatch

import (
	"strings"
	"testing"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestChangedClosesEveryWatcherOfTheInstanceOnly(t *testing.T) {
	t.Parallel()
	var w Watches
	a1, stop1 := w.Watch("a")
	a2, stop2 := w.Watch("a")
	b, stopB := w.Watch("b")
	defer stop1()
	defer stop2()
	defer stopB()
	w.Changed("a")
	if !closed(a1) || !closed(a2) {
		t.Fatal("a watcher of the changed instance was not woken")
	}
	if closed(b) {
		t.Fatal("a watcher of another instance was woken")
	}
	// A new watch after the change waits for the next one.
	a3, stop3 := w.Watch("a")
	defer stop3()
	if closed(a3) {
		t.Fatal("a watch started after the change is already closed")
	}
}

func TestStopReleasesTheEntryWhenTheLastWatcherLeaves(t *testing.T) {
	t.Parallel()
	var w Watches
	_, stop1 := w.Watch("a")
	_, stop2 := w.Watch("a")
	stop1()
	stop1() // idempotent
	if len(w.m) != 1 {
		t.Fatalf("%d entries with one watcher left, want 1", len(w.m))
	}
	stop2()
	if len(w.m) != 0 {
		t.Fatalf("%d entries with no watcher, want 0", len(w.m))
	}
}

func TestObservedWakesOnATerminalStatusOrANewCustomStatusVersion(t *testing.T) {
	t.Parallel()
	var w Watches
	ch, stop := w.Watch("a")
	defer stop()
	w.Observed("a", duroxide.StatusRunning, 3) // first copy: remembered
	w.Observed("a", duroxide.StatusRunning, 3) // same version: nothing
	if closed(ch) {
		t.Fatal("woken by a copy that changed nothing")
	}
	w.Observed("a", duroxide.StatusRunning, 4)
	if !closed(ch) {
		t.Fatal("not woken by a new custom status version")
	}
	ch, stop2 := w.Watch("a")
	defer stop2()
	if !w.Observed("a", duroxide.StatusCompleted, 0) {
		t.Fatal("a copy of a watched instance reported as unwatched")
	}
	if !closed(ch) {
		t.Fatal("not woken by a completion")
	}
	if w.Observed("b", duroxide.StatusCompleted, 0) {
		t.Fatal("a copy of an instance nobody watches reported as watched")
	}
}

func TestChangingIsATerminalStatusOrACustomStatusUpdate(t *testing.T) {
	t.Parallel()
	running, completed := duroxide.StatusRunning, duroxide.StatusCompleted
	if Changing(duroxide.ExecutionMetadata{Status: &running}, nil) {
		t.Fatal("a Running turn without custom status changes the status")
	}
	if !Changing(duroxide.ExecutionMetadata{Status: &completed}, nil) {
		t.Fatal("a completing turn does not change the status")
	}
	if !Changing(duroxide.ExecutionMetadata{}, []duroxide.Event{{Kind: duroxide.CustomStatusUpdated{}}}) {
		t.Fatal("a custom status update does not change the status")
	}
}

func TestMirrorKeepsSmallOutputsOfTheStatusTheDocumentCarries(t *testing.T) {
	t.Parallel()
	out := "done"
	big := strings.Repeat("x", MaxMirroredOutputBytes+1)
	cases := []struct {
		name              string
		docStatus, status string
		output            *string
		known             bool
		wantExec          uint64
		wantOutput        *string
	}{
		{"small terminal output", duroxide.StatusCompleted, duroxide.StatusCompleted, &out, true, 7, &out},
		{"status unknown", duroxide.StatusCompleted, duroxide.StatusCompleted, &out, false, 0, nil},
		{"document says another status", duroxide.StatusRunning, duroxide.StatusCompleted, &out, true, 0, nil},
		{"terminal output too large", duroxide.StatusCompleted, duroxide.StatusCompleted, &big, true, 0, nil},
		{"running, whatever the output", duroxide.StatusRunning, duroxide.StatusRunning, &big, true, 7, &big},
	}
	for _, c := range cases {
		exec, output := Mirror(c.docStatus, 7, c.status, c.output, c.known)
		if exec != c.wantExec || output != c.wantOutput {
			t.Errorf("%s: Mirror = %d, %p; want %d, %p", c.name, exec, output, c.wantExec, c.wantOutput)
		}
	}
}
