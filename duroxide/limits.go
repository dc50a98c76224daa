package duroxide

// DuroxideVersion is the duroxide version whose contract this port follows:
// 0.1.30's wire format and limits with the race rules of duroxide's main
// branch that the package doc lists, main's own stamp "0.1.31". Events the
// Go runtime writes carry it in duroxide_version, and the stamp of an
// execution's OrchestrationStarted selects its race cancellation: 0.1.31
// or newer the immediate one of duroxide main, older the legacy one (see
// "Which duroxide" in the package doc).
const DuroxideVersion = "0.1.31"

// Limits the runtime enforces (duroxide's runtime::limits) and ids it starts
// from (duroxide's lib.rs).
const (
	// InitialExecutionID is the id of an instance's first execution.
	InitialExecutionID uint64 = 1
	// InitialEventID is the id of the first event of an execution.
	InitialEventID uint64 = 1
	// MaxCarryForwardEvents is how many persistent (queue) events
	// continue-as-new carries inside the ContinueAsNew message at most
	// (duroxide 0.1.27: 100). The Go runtime loses none past it: the rest
	// are enqueued again as QueueMessage items in the same atomic ack, so
	// the successor dequeues them after the carried ones.
	MaxCarryForwardEvents = 100
	// MaxCustomStatusBytes is the largest custom status, in bytes (256 KiB).
	MaxCustomStatusBytes = 256 * 1024
	// MaxWorkerTags is how many tags one TagFilter may name at most.
	MaxWorkerTags = 5
	// MaxTagNameBytes is the longest activity tag, in bytes.
	MaxTagNameBytes = 256
	// MaxKVKeys is how many KV keys one instance may hold at most
	// (duroxide 0.1.27: 150).
	MaxKVKeys = 150
	// MaxKVValueBytes is the largest KV value, in bytes (duroxide 0.1.27:
	// 64 KiB).
	MaxKVValueBytes = 64 * 1024
	// SubOrchAutoPrefix starts every child instance id the runtime generates.
	SubOrchAutoPrefix = "sub::"
)
