package providertest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// customStatusCases ports duroxide's src/provider_validation/custom_status.rs; see README.md for
// the table from each Rust test to its Go function.
var customStatusCases = []Case{
	{"test_custom_status_set", CustomStatusSet},
	{"test_custom_status_clear", CustomStatusClear},
	{"test_custom_status_none_preserves", CustomStatusNonePreserves},
	{"test_custom_status_version_increments", CustomStatusVersionIncrements},
	{"test_custom_status_polling_no_change", CustomStatusPollingNoChange},
	{"test_custom_status_nonexistent_instance", CustomStatusNonexistentInstance},
	{"test_custom_status_default_on_new_instance", CustomStatusDefaultOnNewInstance},
}

// CustomStatusSet checks that a turn with a CustomStatusUpdated event sets
// the custom status at version 1 (duroxide's test_custom_status_set).
func CustomStatusSet(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "cs-set")

	customStatusTurn(t, p, "cs-set", customStatusEvent("cs-set", 100, duroxide.StringPtr("progress")))

	cs := customStatusGet(t, p, "cs-set", 0)
	require.NotNil(t, cs, "expected the custom status to be present")
	require.Equal(t, duroxide.StringPtr("progress"), cs.Status)
	require.Equal(t, uint64(1), cs.Version)
}

// CustomStatusClear checks that a CustomStatusUpdated event with no status
// clears the custom status and counts as a change (duroxide's
// test_custom_status_clear).
func CustomStatusClear(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "cs-clear")

	customStatusTurn(t, p, "cs-clear", customStatusEvent("cs-clear", 100, duroxide.StringPtr("temp")))
	cs := customStatusGet(t, p, "cs-clear", 0)
	require.NotNil(t, cs)
	require.Equal(t, duroxide.StringPtr("temp"), cs.Status)

	customStatusTurn(t, p, "cs-clear", customStatusEvent("cs-clear", 101, nil))
	cs = customStatusGet(t, p, "cs-clear", 0)
	require.NotNil(t, cs, "the version changed, so the status should be returned")
	require.Nil(t, cs.Status, "the custom status should be cleared")
	require.Equal(t, uint64(2), cs.Version, "version should be 2 after set and clear")
}

// CustomStatusNonePreserves checks that a turn without a CustomStatusUpdated
// event leaves the custom status and its version alone (duroxide's
// test_custom_status_none_preserves).
func CustomStatusNonePreserves(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "cs-noop")

	customStatusTurn(t, p, "cs-noop", customStatusEvent("cs-noop", 100, duroxide.StringPtr("keep-me")))
	customStatusTurn(t, p, "cs-noop")

	cs := customStatusGet(t, p, "cs-noop", 0)
	require.NotNil(t, cs)
	require.Equal(t, duroxide.StringPtr("keep-me"), cs.Status, "a turn without an update must not modify the status")
	require.Equal(t, uint64(1), cs.Version, "the version must not increase without an update")
}

// CustomStatusVersionIncrements checks that every set and every clear
// increases the version by one (duroxide's
// test_custom_status_version_increments).
func CustomStatusVersionIncrements(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "cs-ver")

	updates := []*string{duroxide.StringPtr("a"), duroxide.StringPtr("b"), nil}
	for i, status := range updates {
		customStatusTurn(t, p, "cs-ver", customStatusEvent("cs-ver", 100+uint64(i), status))
		cs := customStatusGet(t, p, "cs-ver", 0)
		require.NotNil(t, cs)
		require.Equal(t, uint64(i+1), cs.Version, "version after update %d", i+1)
		require.Equal(t, status, cs.Status, "status after update %d", i+1)
	}
}

// CustomStatusPollingNoChange checks that GetCustomStatus returns nothing
// when the version is not newer than the caller's, and the status when it
// is (duroxide's test_custom_status_polling_no_change).
func CustomStatusPollingNoChange(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "cs-poll")

	customStatusTurn(t, p, "cs-poll", customStatusEvent("cs-poll", 100, duroxide.StringPtr("v1")))

	require.Nil(t, customStatusGet(t, p, "cs-poll", 1), "no change since version 1")
	require.NotNil(t, customStatusGet(t, p, "cs-poll", 0), "version 1 > 0")
}

// CustomStatusNonexistentInstance checks that GetCustomStatus returns
// nothing, and no error, for an unknown instance (duroxide's
// test_custom_status_nonexistent_instance).
func CustomStatusNonexistentInstance(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	require.Nil(t, customStatusGet(t, p, "does-not-exist", 0))
}

// CustomStatusDefaultOnNewInstance checks that a new instance has no custom
// status at version 0, so polling from 0 returns nothing (duroxide's
// test_custom_status_default_on_new_instance).
func CustomStatusDefaultOnNewInstance(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "cs-default")
	require.Nil(t, customStatusGet(t, p, "cs-default", 0), "a new instance has version 0, which is not > 0")
}

// customStatusEvent returns a CustomStatusUpdated event of execution 1 of
// instance; a nil status clears the custom status.
func customStatusEvent(instance string, eventID uint64, status *string) duroxide.Event {
	return duroxide.NewEvent(eventID, instance, 1, nil, duroxide.CustomStatusUpdated{Status: status})
}

// customStatusPoke is duroxide's poke_item: an external event that makes instance
// fetchable.
func customStatusPoke(instance string) duroxide.WorkItem {
	return duroxide.WorkItem{Kind: duroxide.ExternalRaisedItem{Instance: instance, Name: "poke", Data: "{}"}}
}

// customStatusTurn runs one turn of execution 1 of instance (duroxide's
// poke_item and ack_with_metadata): it enqueues an external event to make
// the instance fetchable, fetches it and acks it with historyDelta and
// empty metadata.
func customStatusTurn(t *testing.T, p duroxide.Provider, instance string, historyDelta ...duroxide.Event) {
	t.Helper()
	enqueueOrch(t, p, customStatusPoke(instance))
	item := fetchOrch(t, p, longLock)
	require.Equal(t, instance, item.Instance)
	ackTurn(t, p, item.LockToken, 1, historyDelta, duroxide.ExecutionMetadata{})
}

// customStatusGet calls GetCustomStatus, failing t on error.
func customStatusGet(t *testing.T, p duroxide.Provider, instance string, lastSeenVersion uint64) *duroxide.CustomStatus {
	t.Helper()
	cs, err := p.GetCustomStatus(t.Context(), instance, lastSeenVersion)
	require.NoError(t, err, "get_custom_status")
	return cs
}
