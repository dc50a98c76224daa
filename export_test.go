package cdb

import (
	"context"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// SetFetchTracer makes p report every step of its fetches to f; call it
// before p's first fetch.
func SetFetchTracer(p *Provider, f func(event string)) {
	p.fetchTracer = func(ev fetchEvent) { f(string(ev)) }
}

// InstanceInfoFromExecution is GetInstanceInfo as it was before the
// instance document mirrored the current execution's status and output: it
// always reads them from the execution document (2 point reads).
func InstanceInfoFromExecution(ctx context.Context, p *Provider, instance string) (duroxide.InstanceInfo, error) {
	return p.instanceInfo(ctx, instance, p.readExecutionStatus)
}
