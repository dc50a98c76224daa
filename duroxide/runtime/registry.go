package runtime

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// OrchestrationFunc is an orchestration: it receives its context and input
// and returns its output, or an error that fails the orchestration with an
// Application/OrchestrationFailed error whose message is err.Error().
type OrchestrationFunc func(ctx *OrchestrationContext, input string) (string, error)

// ActivityFunc is an activity: it receives its context (a context.Context
// that is cancelled when the orchestration no longer needs the result) and
// input, and returns its result, or an error that fails the activity with an
// Application/ActivityFailed error whose message is err.Error().
type ActivityFunc func(ctx *ActivityContext, input string) (string, error)

// DefaultVersion is the version Register* gives an orchestration registered
// without one (duroxide's registry default).
const DefaultVersion = "1.0.0"

// syscallPrefix starts the names of duroxide's built-in system activities;
// user activities may not use it.
const syscallPrefix = "__duroxide_syscall:"

// VersionPolicy says which registered version of an orchestration a start
// without an explicit version runs (duroxide's VersionPolicy).
type VersionPolicy struct {
	// Exact pins the version; nil means the latest registered version.
	Exact *duroxide.Version
}

// LatestVersion is the default policy: the highest registered version.
func LatestVersion() VersionPolicy { return VersionPolicy{} }

// ExactVersion pins starts to version v.
func ExactVersion(v duroxide.Version) VersionPolicy { return VersionPolicy{Exact: &v} }

type versionedOrchestration struct {
	version duroxide.Version
	fn      OrchestrationFunc
}

// Registry holds the orchestrations (by name and semantic version) and the
// activities (by name) a Runtime can run (duroxide's OrchestrationRegistry
// and ActivityRegistry). Register everything before Start; it is safe for
// concurrent use, and SetVersionPolicy may be called while running.
type Registry struct {
	mu             sync.RWMutex
	orchestrations map[string][]versionedOrchestration // ascending versions
	policies       map[string]VersionPolicy
	activities     map[string]ActivityFunc
	// gen counts the changes to orchestrations and policies: an execution
	// suspended in the sticky cache resumes only under the generation it
	// ran with.
	gen uint64
}

// errNilRegistry is the error of a registration on a nil *Registry.
var errNilRegistry = errors.New("runtime: registration on a nil *Registry (use NewRegistry)")

// ErrDuplicateRegistration is matched (errors.Is) by the error of a
// registration whose name is registered already: an activity's name, or
// an orchestration's name and version.
var ErrDuplicateRegistration = errors.New("runtime: duplicate registration")

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		orchestrations: map[string][]versionedOrchestration{},
		policies:       map[string]VersionPolicy{},
		activities:     map[string]ActivityFunc{},
	}
}

// RegisterOrchestration registers fn as version 1.0.0 of name. It returns an
// error for an empty name, a nil fn, or a duplicate name@version
// (ErrDuplicateRegistration).
func (r *Registry) RegisterOrchestration(name string, fn OrchestrationFunc) error {
	return r.RegisterOrchestrationVersion(name, DefaultVersion, fn)
}

// RegisterOrchestrationVersion registers fn as version (semver, e.g.
// "2.0.0") of name. Versions of one name must be registered in ascending
// order, except that 1.0.0 (the default) may come at any time, as in
// duroxide. It returns an error for a nil Registry, an empty name, a nil
// fn, a malformed version, a duplicate (ErrDuplicateRegistration) or a
// non-monotonic version.
func (r *Registry) RegisterOrchestrationVersion(name, version string, fn OrchestrationFunc) error {
	if r == nil {
		return errNilRegistry
	}
	if name == "" || fn == nil {
		return fmt.Errorf("runtime: orchestration registration needs a name and a function")
	}
	v, err := duroxide.ParseVersion(version)
	if err != nil {
		return fmt.Errorf("runtime: orchestration %s: %w", name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.orchestrations[name]
	for _, e := range list {
		if e.version.Compare(v) == 0 {
			return fmt.Errorf("%w: orchestration %s@%s", ErrDuplicateRegistration, name, v)
		}
	}
	if version != DefaultVersion && len(list) > 0 && v.Compare(list[len(list)-1].version) <= 0 {
		return fmt.Errorf("runtime: non-monotonic orchestration version for %s: %s is not later than existing latest %s", name, v, list[len(list)-1].version)
	}
	list = append(list, versionedOrchestration{version: v, fn: fn})
	slices.SortFunc(list, func(a, b versionedOrchestration) int { return a.version.Compare(b.version) })
	r.orchestrations[name] = list
	r.gen++
	return nil
}

// SetVersionPolicy sets which version starts of name without an explicit
// version resolve to. It does nothing on a nil Registry.
func (r *Registry) SetVersionPolicy(name string, p VersionPolicy) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.policies[name] = p
	r.gen++
}

// generation returns the registry's change count (see gen).
func (r *Registry) generation() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.gen
}

// RegisterActivity registers fn as activity name. It returns an error for a
// nil Registry, an empty name, a nil fn, a duplicate
// (ErrDuplicateRegistration), or a name in
// duroxide's reserved "__duroxide_syscall:" namespace.
func (r *Registry) RegisterActivity(name string, fn ActivityFunc) error {
	if strings.HasPrefix(name, syscallPrefix) {
		return fmt.Errorf("runtime: activity name '%s' uses reserved prefix '%s'", name, syscallPrefix)
	}
	return r.registerActivity(name, fn)
}

func (r *Registry) registerActivity(name string, fn ActivityFunc) error {
	if r == nil {
		return errNilRegistry
	}
	if name == "" || fn == nil {
		return fmt.Errorf("runtime: activity registration needs a name and a function")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.activities[name]; dup {
		return fmt.Errorf("%w: activity %s", ErrDuplicateRegistration, name)
	}
	r.activities[name] = fn
	return nil
}

// resolveOrchestration returns the function and version to run for name:
// exactly version when it is non-nil, otherwise the name's policy (latest by
// default). ok is false when nothing matches.
func (r *Registry) resolveOrchestration(name string, version *string) (fn OrchestrationFunc, v duroxide.Version, ok bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	list := r.orchestrations[name]
	find := func(want duroxide.Version) (OrchestrationFunc, duroxide.Version, bool) {
		for _, e := range list {
			if e.version.Compare(want) == 0 {
				return e.fn, e.version, true
			}
		}
		return nil, duroxide.Version{}, false
	}
	if version != nil {
		want, err := duroxide.ParseVersion(*version)
		if err != nil {
			return nil, duroxide.Version{}, false
		}
		return find(want)
	}
	if p, set := r.policies[name]; set && p.Exact != nil {
		return find(*p.Exact)
	}
	if len(list) == 0 {
		return nil, duroxide.Version{}, false
	}
	last := list[len(list)-1]
	return last.fn, last.version, true
}

// resolveActivity returns the activity registered as name.
func (r *Registry) resolveActivity(name string) (ActivityFunc, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	fn, ok := r.activities[name]
	return fn, ok
}

// RegisterOrchestrationTyped registers a typed orchestration as version
// 1.0.0 of name: the input is decoded with Decode and the output encoded with
// Encode (duroxide's register_typed); a decode or encode failure fails the
// orchestration.
func RegisterOrchestrationTyped[In, Out any](r *Registry, name string, fn func(ctx *OrchestrationContext, input In) (Out, error)) error {
	return RegisterOrchestrationVersionTyped(r, name, DefaultVersion, fn)
}

// RegisterOrchestrationVersionTyped is RegisterOrchestrationTyped for an
// explicit version, with RegisterOrchestrationVersion's errors.
func RegisterOrchestrationVersionTyped[In, Out any](r *Registry, name, version string, fn func(ctx *OrchestrationContext, input In) (Out, error)) error {
	if fn == nil {
		return fmt.Errorf("runtime: orchestration registration needs a name and a function")
	}
	return r.RegisterOrchestrationVersion(name, version, typed(fn))
}

// RegisterActivityTyped registers a typed activity: the input is decoded
// with Decode and the result encoded with Encode; a decode or encode failure
// fails the activity.
func RegisterActivityTyped[In, Out any](r *Registry, name string, fn func(ctx *ActivityContext, input In) (Out, error)) error {
	if fn == nil {
		return fmt.Errorf("runtime: activity registration needs a name and a function")
	}
	return r.RegisterActivity(name, typed(fn))
}

// typed wraps a typed function into its string form: the input decoded
// with Decode, the output encoded with Encode.
func typed[C, In, Out any](fn func(ctx C, input In) (Out, error)) func(C, string) (string, error) {
	return func(ctx C, input string) (string, error) {
		in, err := Decode[In](input)
		if err != nil {
			return "", err
		}
		out, err := fn(ctx, in)
		if err != nil {
			return "", err
		}
		return Encode(out)
	}
}
