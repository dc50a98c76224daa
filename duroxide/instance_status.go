package duroxide

import "context"

// InstanceStatusReader is an optional addition to a ProviderAdmin: it
// returns an instance's metadata and its custom status together, from one
// read where the provider stores them together, so that a client waiting
// for an instance to finish reads it once at the end instead of twice. It
// is a Go addition; duroxide's client calls get_instance_info and
// get_custom_status.
type InstanceStatusReader interface {
	// GetInstanceStatus returns what GetInstanceInfo returns and what
	// GetCustomStatus(ctx, instance, 0) returns (nil when the custom status
	// was never set), as of one moment; its errors are GetInstanceInfo's
	// (a permanent ProviderError "Instance <id> not found" for an unknown
	// instance).
	GetInstanceStatus(ctx context.Context, instance string) (InstanceInfo, *CustomStatus, error)
}
