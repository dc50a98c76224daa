package providertest

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// Case is one validation test: Name is the Rust test's name in duroxide
// (e.g. "test_atomicity_failure_rollback") and Run is its Go port.
type Case struct {
	Name string
	Run  func(t *testing.T, f Factory)
}

// Group is one file of duroxide's provider_validation suite.
type Group struct {
	Name  string // the Rust module name, e.g. "atomicity"
	Cases []Case
}

// Groups returns every group of the suite in duroxide's order.
func Groups() []Group {
	return []Group{
		{"atomicity", atomicityCases},
		{"bulk_deletion", bulkDeletionCases},
		{"can_abandon_failure", canAbandonFailureCases},
		{"cancellation", cancellationCases},
		{"capability_filtering", capabilityFilteringCases},
		{"custom_status", customStatusCases},
		{"deletion", deletionCases},
		{"error_handling", errorHandlingCases},
		{"instance_creation", instanceCreationCases},
		{"instance_locking", instanceLockingCases},
		{"instance_pages", instancePagesCases},
		{"history_pages", historyPagesCases},
		{"kv_store", kvStoreCases},
		{"lock_expiration", lockExpirationCases},
		{"long_polling", longPollingCases},
		{"management", managementCases},
		{"multi_execution", multiExecutionCases},
		{"poison_message", poisonMessageCases},
		{"prune", pruneCases},
		{"queue_semantics", queueSemanticsCases},
		{"race_replay", raceReplayCases},
		{"sessions", sessionsCases},
		{"suborch_id_collision", suborchIDCollisionCases},
		{"tag_filtering", tagFilteringCases},
	}
}

// Tally counts the outcomes of the cases a run executed.
type Tally struct {
	passed, failed, skipped atomic.Int64
}

// String returns "N passed, N failed, N skipped".
func (c *Tally) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", c.passed.Load(), c.failed.Load(), c.skipped.Load())
}

// Passed returns the number of passed cases so far.
func (c *Tally) Passed() int64 { return c.passed.Load() }

// Failed returns the number of failed cases.
func (c *Tally) Failed() int64 { return c.failed.Load() }

// Skipped returns the number of skipped cases.
func (c *Tally) Skipped() int64 { return c.skipped.Load() }

// RunGroup runs every case of g as a parallel subtest of t named after the
// Rust test, counting outcomes in tally (which may be nil). It returns
// once every case ended.
func RunGroup(t *testing.T, f Factory, g Group, tally *Tally) {
	t.Run(g.Name, func(t *testing.T) { runCases(t, f, g, tally) })
}

// runCases runs every case of g as a parallel subtest of t, counting
// outcomes in tally (which may be nil).
func runCases(t *testing.T, f Factory, g Group, tally *Tally) {
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			if tally != nil {
				t.Cleanup(func() {
					switch {
					case t.Failed():
						tally.failed.Add(1)
					case t.Skipped():
						tally.skipped.Add(1)
					default:
						tally.passed.Add(1)
					}
				})
			}
			c.Run(t, f)
		})
	}
}

// RunAll runs the whole suite against f, every case as a parallel
// subtest (the groups too, so that the cases of all groups share the
// -parallel slots rather than one group waiting for the last case of the
// one before), and logs the tally at the end ("validation: N passed, N
// failed, N skipped"); it returns the tally so callers can assert on it.
func RunAll(t *testing.T, f Factory) *Tally {
	tally := &Tally{}
	t.Run("validation", func(t *testing.T) {
		for _, g := range Groups() {
			t.Run(g.Name, func(t *testing.T) {
				t.Parallel()
				runCases(t, f, g, tally)
			})
		}
	})
	t.Logf("validation: %s", tally)
	fmt.Printf("provider validation suite: %s\n", tally)
	return tally
}

// requireCorrupter returns f's HistoryCorrupter hook or skips t naming it.
func requireCorrupter(t *testing.T, f Factory) HistoryCorrupter {
	t.Helper()
	h, ok := f.(HistoryCorrupter)
	if !ok {
		t.Skip("skipped: factory lacks the optional hook HistoryCorrupter (duroxide's corrupt_instance_history)")
	}
	return h
}

// requireAttemptCountReader returns f's AttemptCountReader hook or skips t
// naming it.
func requireAttemptCountReader(t *testing.T, f Factory) AttemptCountReader {
	t.Helper()
	h, ok := f.(AttemptCountReader)
	if !ok {
		t.Skip("skipped: factory lacks the optional hook AttemptCountReader (duroxide's get_max_attempt_count)")
	}
	return h
}
