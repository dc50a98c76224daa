// Encoding of work items and history events into documents, and decoding an
// execution's visible history.

package cdb

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// encodeWorkItem returns the duroxide JSON of a work item.
func encodeWorkItem(item duroxide.WorkItem) (string, error) {
	b, err := json.Marshal(item)
	if err != nil {
		return "", fmt.Errorf("encode work item: %w", err)
	}
	return string(b), nil
}

// decodeWorkItem decodes a work item stored as duroxide JSON.
func decodeWorkItem(s string) (duroxide.WorkItem, error) {
	var w duroxide.WorkItem
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return duroxide.WorkItem{}, fmt.Errorf("decode work item: %w", err)
	}
	return w, nil
}

// encodeEvent returns the duroxide JSON of an event.
func encodeEvent(ev duroxide.Event) (string, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return "", fmt.Errorf("encode event %d: %w", ev.EventID, err)
	}
	return string(b), nil
}

// decodeHistory sorts history documents by event id, drops those above the
// watermark (staged parts of an ack that never committed), and decodes the
// rest. Undecodable data is an error naming the event's position, never a
// silently shorter history (duroxide's history deserialization contract).
func decodeHistory(instance string, executionID, watermark uint64, docs []historyDoc) ([]duroxide.Event, error) {
	sort.Slice(docs, func(i, j int) bool { return docs[i].EventID < docs[j].EventID })
	events := make([]duroxide.Event, 0, len(docs))
	for i, d := range docs {
		if d.EventID > watermark {
			break
		}
		var ev duroxide.Event
		if err := json.Unmarshal([]byte(d.EventData), &ev); err != nil {
			return nil, fmt.Errorf("failed to deserialize history event at position %d for instance '%s' execution %d: %w", i, instance, executionID, err)
		}
		events = append(events, ev)
	}
	return events, nil
}

// visibleHistory filters history documents to those at or below the
// watermark.
func visibleHistory(docs []historyDoc, watermark uint64) []historyDoc {
	out := docs[:0:0]
	for _, d := range docs {
		if d.EventID <= watermark {
			out = append(out, d)
		}
	}
	return out
}
