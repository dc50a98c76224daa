// Status mirror: the current execution's status kept on the instance
// document, and reading an execution's status.

package cdb

import (
	"context"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// maxMirroredOutputBytes bounds the terminal output an ack copies onto the
// instance document (bytes): a larger output stays on the execution
// document only, so that it neither doubles the size of the ack's batch
// nor of every later read of the instance document; GetInstanceInfo then
// reads the execution document.
const maxMirroredOutputBytes = 16 << 10

// mirrorExecution records on doc, the instance document an ack writes,
// the status and output that the same batch leaves on execution
// executionID's document, when doc.Status is that status (it is, except
// when the execution document was missing) and the output is small
// enough; otherwise doc mirrors no execution. known is false when the
// execution's status is not known without a read (an ack that leaves the
// status alone, on an instance document that did not mirror it).
// A running execution's output is nil by duroxide's contract
// (duroxide.InstanceInfo), so a Running status is mirrored whatever the
// output's size.
func mirrorExecution(doc *instanceDoc, executionID uint64, status string, output *string, known bool) {
	doc.StatusExecutionID, doc.Output = 0, nil
	if !known || doc.Status != status {
		return
	}
	if status != duroxide.StatusRunning && output != nil && len(*output) > maxMirroredOutputBytes {
		return
	}
	doc.StatusExecutionID, doc.Output = executionID, output
}

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
