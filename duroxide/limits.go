package duroxide

// DuroxideVersion is the duroxide release this port tracks (0.1.26); events
// the Go runtime writes carry it in duroxide_version.
const DuroxideVersion = "0.1.26"

// Limits the runtime enforces (duroxide's runtime::limits) and ids it starts
// from (duroxide's lib.rs).
const (
	// InitialExecutionID is the id of an instance's first execution.
	InitialExecutionID uint64 = 1
	// InitialEventID is the id of the first event of an execution.
	InitialEventID uint64 = 1
	// MaxCarryForwardEvents is how many persistent events continue-as-new
	// carries into the next execution at most.
	MaxCarryForwardEvents = 20
	// MaxCustomStatusBytes is the largest custom status, in bytes (256 KiB).
	MaxCustomStatusBytes = 256 * 1024
	// MaxWorkerTags is how many tags one TagFilter may name at most.
	MaxWorkerTags = 5
	// MaxTagNameBytes is the longest activity tag, in bytes.
	MaxTagNameBytes = 256
	// MaxKVKeys is how many KV keys one instance may hold at most.
	MaxKVKeys = 100
	// MaxKVValueBytes is the largest KV value, in bytes (16 KiB).
	MaxKVValueBytes = 16 * 1024
	// SubOrchAutoPrefix starts every child instance id the runtime generates.
	SubOrchAutoPrefix = "sub::"
)
