// Partition state: one partition's documents parsed by kind (instance,
// executions, queue messages, sessions, KV).

package cdb

import (
	"encoding/json"
	"fmt"
	"sort"
)

// partitionState is what one single-partition query returned about an
// instance, sorted by document type.
type partitionState struct {
	inst       *instanceDoc
	msgs       []*queueDoc
	workers    []*queueDoc
	kv         kvState
	executions []*executionDoc
	history    []historyDoc
	sessions   []*sessionDoc
	intents    []*intentDoc
	other      []docHeader
}

// parseState decodes the documents of one partition by their type; the
// orchestrator-queue messages come out in enqueue order.
func parseState(raws [][]byte) (partitionState, error) {
	var st partitionState
	kvDocs := map[string]*kvDoc{}
	for _, raw := range raws {
		var h docHeader
		if err := json.Unmarshal(raw, &h); err != nil {
			return st, fmt.Errorf("decode document: %w", err)
		}
		var err error
		switch h.Type {
		case typeInstance, typeInstancePending:
			st.inst, err = decodeInstanceDoc(raw)
		case typeOrchQueue, typeWorkerQueue:
			d := &queueDoc{}
			d.ETag, err = decodeDoc(raw, d)
			if h.Type == typeOrchQueue {
				st.msgs = append(st.msgs, d)
			} else {
				st.workers = append(st.workers, d)
			}
		case typeKV:
			// One pass: KV documents can be megabytes.
			var d struct {
				kvDoc
				SysETag string `json:"_etag"`
			}
			if err = json.Unmarshal(raw, &d); err != nil {
				err = fmt.Errorf("decode document: %w", err)
				break
			}
			d.ETag = d.SysETag
			kvDocs[d.ID] = &d.kvDoc
		case typeExecution:
			d := &executionDoc{}
			d.ETag, err = decodeDoc(raw, d)
			st.executions = append(st.executions, d)
		case typeHistory:
			var d historyDoc
			_, err = decodeDoc(raw, &d)
			st.history = append(st.history, d)
		case typeSession:
			d := &sessionDoc{}
			d.ETag, err = decodeDoc(raw, d)
			st.sessions = append(st.sessions, d)
		case typeOutboxIntent:
			d := &intentDoc{}
			_, err = decodeDoc(raw, d)
			st.intents = append(st.intents, d)
		default:
			st.other = append(st.other, h)
		}
		if err != nil {
			return st, err
		}
	}
	if len(kvDocs) > 0 {
		var err error
		if st.kv, err = resolveKV(kvDocs); err != nil {
			return st, err
		}
	}
	sort.Slice(st.msgs, func(i, j int) bool { return st.msgs[i].before(st.msgs[j]) })
	sort.Slice(st.executions, func(i, j int) bool { return st.executions[i].ExecutionID < st.executions[j].ExecutionID })
	return st, nil
}

// execution returns the execution document with id executionID, or nil.
func (st *partitionState) execution(executionID uint64) *executionDoc {
	for _, e := range st.executions {
		if e.ExecutionID == executionID {
			return e
		}
	}
	return nil
}
