package duroxide

// StatusWatcher is an optional capability of a Provider: it tells a client
// waiting in the same process when an instance's status may have changed,
// so that waits need not poll. It is a Go addition; duroxide's client
// (microsoft/duroxide src/client) polls the provider on a fixed backoff.
// A client that finds it still checks the status itself (the channel only
// says "look again") and keeps a slower poll for changes made by other
// processes, which need not close the channel.
type StatusWatcher interface {
	// WatchStatus returns a channel closed the next time this provider
	// commits a change of instance's status, output or custom status (an
	// orchestration turn that completes, fails or continues it as new, or
	// updates its custom status), and stop, which releases the watch (safe
	// to call more than once, and after the channel closed). Take the
	// channel before reading the status, so that no change falls between.
	WatchStatus(instance string) (changed <-chan struct{}, stop func())
}

// AllProcessesStatusWatcher is an optional addition to a StatusWatcher
// whose watches also close on changes other processes commit (a provider
// that follows the store's change feed, for instance). A client waiting on
// such a watcher needs no poll for other processes' changes, only a rare
// safety check in case a notification is lost. It is a Go addition, like
// StatusWatcher.
type AllProcessesStatusWatcher interface {
	StatusWatcher
	// WatchesAllProcesses reports whether the watches close on every
	// process's changes now (it may change over the provider's life, for
	// instance while its change feed reader runs).
	WatchesAllProcesses() bool
}

// StatusWatchCapable is implemented by providers that expose a
// StatusWatcher through another value (a wrapper that counts calls, for
// instance), the way ManagementCapable exposes ProviderAdmin.
type StatusWatchCapable interface {
	// StatusWatchCapability returns the watcher, or nil when there is none.
	StatusWatchCapability() StatusWatcher
}

// AsStatusWatcher returns p's StatusWatcher: p's StatusWatchCapability()
// when p implements StatusWatchCapable, otherwise p itself when it
// implements StatusWatcher. ok is false when p has none.
func AsStatusWatcher(p Provider) (w StatusWatcher, ok bool) {
	if c, yes := p.(StatusWatchCapable); yes {
		w = c.StatusWatchCapability()
		return w, w != nil
	}
	w, ok = p.(StatusWatcher)
	return w, ok
}
