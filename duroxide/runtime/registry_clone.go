package runtime

// Copies of a registry, for tests that replace or observe activities
// (package runtimetest's activity mocks).

import (
	"maps"
	"slices"
)

// Clone returns a copy of r: the same orchestrations (every version),
// version policies and activities, each activity passed through
// wrapActivity(name, fn) when wrapActivity is non-nil (a test wraps them
// to record or replace calls). Registrations and policies set on either
// registry afterwards do not reach the other. Clone of a nil Registry is
// an empty registry.
func (r *Registry) Clone(wrapActivity func(name string, fn ActivityFunc) ActivityFunc) *Registry {
	return r.CloneWith(CloneOptions{WrapActivity: wrapActivity})
}

// CloneOptions are the wrappers of CloneWith; a nil wrapper, or one that
// returns nil, keeps the function as it is.
type CloneOptions struct {
	// WrapActivity wraps each activity (name, function).
	WrapActivity func(name string, fn ActivityFunc) ActivityFunc
	// WrapOrchestration wraps each orchestration version (name, version
	// such as "1.0.0", function): package runtimetest's orchestration
	// mocks stand in for sub-orchestrations through it.
	WrapOrchestration func(name, version string, fn OrchestrationFunc) OrchestrationFunc
}

// CloneWith is Clone with wrappers for activities and orchestrations.
func (r *Registry) CloneWith(o CloneOptions) *Registry {
	out := NewRegistry()
	if r == nil {
		return out
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for name, list := range r.orchestrations {
		list = append([]versionedOrchestration(nil), list...)
		if o.WrapOrchestration != nil {
			for i := range list {
				if wrapped := o.WrapOrchestration(name, list[i].version.String(), list[i].fn); wrapped != nil {
					list[i].fn = wrapped
				}
			}
		}
		out.orchestrations[name] = list
	}
	maps.Copy(out.policies, r.policies)
	for name, fn := range r.activities {
		if o.WrapActivity != nil {
			if wrapped := o.WrapActivity(name, fn); wrapped != nil {
				fn = wrapped
			}
		}
		out.activities[name] = fn
	}
	return out
}

// OrchestrationNames returns the names of the registered orchestrations,
// sorted (each once, whatever its versions).
func (r *Registry) OrchestrationNames() []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.orchestrations))
}

// ActivityNames returns the names of the registered activities, sorted
// (duroxide's built-in system activities are not registered, so not
// listed).
func (r *Registry) ActivityNames() []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.activities))
}
