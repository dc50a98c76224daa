// Status watches: clients in this process waiting for an instance's status
// wake on this process's acks instead of polling (package
// internal/statuswatch holds the watches).

package cdb

import (
	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// WatchStatus implements duroxide.StatusWatcher: the channel closes when
// this Provider acks a turn of instance that completes, fails or continues
// it as new, or updates its custom status, or deletes it; with
// the change-feed reader also when the change feed shows another
// process's such change (see WatchesAllProcesses). Without the change feed,
// changes made by other processes do not close it; the runtime's client
// keeps a capped backoff poll for them. Memory: one small entry per watched
// instance, released by stop or by the change.
func (p *Provider) WatchStatus(instance string) (changed <-chan struct{}, stop func()) {
	return p.statusWatches.Watch(instance)
}

// WatchesAllProcesses implements duroxide.AllProcessesStatusWatcher: true
// while the change-feed reader (Config.DisableChangeFeedWakeups) runs, whose
// copies of instance documents close the watches of other processes'
// status changes too.
func (p *Provider) WatchesAllProcesses() bool { return p.feed != nil }

var _ duroxide.AllProcessesStatusWatcher = (*Provider)(nil)
