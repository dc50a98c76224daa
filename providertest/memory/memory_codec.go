package memory

import (
	"encoding/json"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// memEncodeWorkItem encodes item with duroxide's serde-compatible codec,
// as SQLite stores work_item, and returns the bytes together with a
// private copy decoded from them, so that no queue row shares memory with
// the caller's value. A failure is SQLite's permanent "Serialization
// error: ..." for op, with the codec's error as its Cause.
func memEncodeWorkItem(op string, item duroxide.WorkItem) ([]byte, duroxide.WorkItem, error) {
	data, err := json.Marshal(item)
	if err != nil {
		return nil, duroxide.WorkItem{}, memPermanentCause(op, "Serialization error: ", err)
	}
	copied, err := memDecodeWorkItem(data)
	if err != nil {
		return nil, duroxide.WorkItem{}, memPermanentCause(op, "Serialization error: ", err)
	}
	return data, copied, nil
}

// memDecodeWorkItem decodes a stored work item into a fresh value.
func memDecodeWorkItem(data []byte) (duroxide.WorkItem, error) {
	var item duroxide.WorkItem
	if err := json.Unmarshal(data, &item); err != nil {
		return duroxide.WorkItem{}, err
	}
	return item, nil
}

// memEncodedItem is a work item validated and encoded ahead of a commit.
type memEncodedItem struct {
	item duroxide.WorkItem
	data []byte
}
