package candidates

// NumSlots is the number of dispatch slots (the provider's
// NumDispatchSlots): every instance hashes to one.
const NumSlots = 256

// Row is a row of the provider's work-item candidate query: a worker-queue
// message or an active session document (the fields a fetch needs, by
// their document names).
type Row struct {
	ID           string  `json:"id"`
	InstanceID   string  `json:"instanceId"`
	Type         string  `json:"type"`
	EnqueuedAt   int64   `json:"enqueuedAt"`
	Seq          string  `json:"seq"`
	VisibleAt    int64   `json:"visibleAt"`
	Tag          *string `json:"tag"`
	ETag         string  `json:"_etag"`
	SessionID    *string `json:"sessionId"`
	OwnerID      string  `json:"ownerId"`
	LockedUntil  int64   `json:"lockedUntil"`
	CreatedAt    int64   `json:"createdAt"`
	DispatchSlot int     `json:"dispatchSlot"`
}
