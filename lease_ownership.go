package cdb

// SlotOwner is implemented by LeaseProviders that know how many of the
// NumDispatchSlots dispatch slots of their queue this process owns; the
// provider reports it as the gauge duroxide_cosmosdb_slots_owned {queue}
// (metrics.go). A lease provider that coordinates several processes
// (leases stored in Cosmos DB) reports its current share; one that does not
// implement SlotOwner is not reported.
type SlotOwner interface {
	// OwnedSlots returns the number of slots this process owns now, 0 to
	// NumDispatchSlots.
	OwnedSlots() int
}

// OwnedSlots returns NumDispatchSlots: the in-memory provider's lanes
// split all 256 slots among this process's dispatchers, and no other
// process takes any (SlotOwner).
func (p *InMemoryLeaseProvider) OwnedSlots() int { return NumDispatchSlots }
