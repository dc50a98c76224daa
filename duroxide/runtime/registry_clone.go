package runtime

// Copies of a registry, for tests that replace or observe activities
// (package runtimetest's activity mocks).

import "maps"

// Clone returns a copy of r: the same orchestrations (every version),
// version policies and activities, each activity passed through
// wrapActivity(name, fn) when wrapActivity is non-nil (a test wraps them
// to record or replace calls). Registrations and policies set on either
// registry afterwards do not reach the other. Clone of a nil Registry is
// an empty registry.
func (r *Registry) Clone(wrapActivity func(name string, fn ActivityFunc) ActivityFunc) *Registry {
	out := NewRegistry()
	if r == nil {
		return out
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for name, list := range r.orchestrations {
		out.orchestrations[name] = append([]versionedOrchestration(nil), list...)
	}
	maps.Copy(out.policies, r.policies)
	for name, fn := range r.activities {
		if wrapActivity != nil {
			if wrapped := wrapActivity(name, fn); wrapped != nil {
				fn = wrapped
			}
		}
		out.activities[name] = fn
	}
	return out
}
