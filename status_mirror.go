// Status mirror: reading the current execution's status, from the
// instance document when it mirrors it (statuswatch.Mirror decides what an
// ack mirrors) or from the execution document.

package cdb

import (
	"context"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// currentStatus returns the status and output of doc's current execution.
// They come from doc itself when it mirrors that execution, or when it
// mirrors none and says Running (an instance document written before
// mirroring existed: its Status was written by the batch that wrote the
// execution's status, and a running execution has no output); otherwise
// from the execution document. Requests: 0, or 1 point read.
func (p *Provider) currentStatus(ctx context.Context, op, instance string, doc *instanceDoc) (string, *string, error) {
	switch {
	case doc.StatusExecutionID != 0 && doc.StatusExecutionID == doc.CurrentExecutionID:
		return doc.Status, doc.Output, nil
	case doc.StatusExecutionID == 0 && doc.Status == duroxide.StatusRunning:
		return duroxide.StatusRunning, nil, nil
	}
	return p.readExecutionStatus(ctx, op, instance, doc)
}

// readExecutionStatus returns the status and output of doc's current
// execution from its execution document, "Unknown" and nil when that
// document does not exist. Requests: 1 point read.
func (p *Provider) readExecutionStatus(ctx context.Context, op, instance string, doc *instanceDoc) (string, *string, error) {
	var ex executionDoc
	_, found, err := p.readDoc(ctx, instance, executionDocID(doc.CurrentExecutionID), &ex)
	if err != nil {
		return "", nil, mapError(op, err)
	}
	if !found {
		return "Unknown", nil, nil
	}
	return ex.Status, ex.Output, nil
}
