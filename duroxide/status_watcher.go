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
