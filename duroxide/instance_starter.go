package duroxide

import "context"

// InstanceStarter is an optional capability of a Provider: a start that is
// refused when the instance already exists, so that a client can tell its
// caller. It is a Go addition. duroxide's contract has
// EnqueueForOrchestrator accept any start (its validation suite enqueues
// starts for existing instances) and the runtime drop a start whose
// instance's history has already begun; durabletask-go refuses such a start
// with an "instance exists" error, which is what this capability gives.
type InstanceStarter interface {
	// EnqueueStart enqueues start as EnqueueForOrchestrator does, unless
	// its instance exists: it has run and was not deleted, or a start of it
	// is already stored. Then it returns a permanent *ProviderError
	// wrapping ErrInstanceExists and writes nothing.
	EnqueueStart(ctx context.Context, start StartOrchestrationItem) error
}

// InstanceStartCapable is implemented by providers that expose an
// InstanceStarter through another value (a wrapper that counts calls, for
// instance), the way ManagementCapable exposes ProviderAdmin.
type InstanceStartCapable interface {
	// InstanceStartCapability returns the starter, or nil when there is
	// none.
	InstanceStartCapability() InstanceStarter
}

// AsInstanceStarter returns p's InstanceStarter: p's
// InstanceStartCapability() when p implements InstanceStartCapable,
// otherwise p itself when it implements InstanceStarter. ok is false when p
// has none.
func AsInstanceStarter(p Provider) (s InstanceStarter, ok bool) {
	if c, yes := p.(InstanceStartCapable); yes {
		s = c.InstanceStartCapability()
		return s, s != nil
	}
	s, ok = p.(InstanceStarter)
	return s, ok
}
