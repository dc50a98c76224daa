package runtimetest

// Recorded histories: their shape, and reading them from files and
// providers.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// History is one instance's recorded history: the document `cdb-admin
// export` writes for an instance,
//
//	{"instance_id": "orders/7",
//	 "executions": [{"execution_id": 1, "events": [<event>, ...]}, ...]}
//
// with each event in duroxide's serde JSON (duroxide.Event's
// MarshalJSON).
type History struct {
	// InstanceID is the instance the history belongs to.
	InstanceID string `json:"instance_id"`
	// Executions are the instance's stored executions in ascending order
	// (older ones may have been pruned).
	Executions []Execution `json:"executions"`
	// Source says where the history was read: a file's path, or
	// "provider". It is not part of the JSON document.
	Source string `json:"-"`
}

// Execution is one execution of a History.
type Execution struct {
	// ExecutionID is the execution's id (1, then one more per
	// continue-as-new).
	ExecutionID uint64 `json:"execution_id"`
	// Events are the execution's events in order, the first one its
	// OrchestrationStarted.
	Events []duroxide.Event `json:"events"`
}

// Events returns the events of every execution, in order.
func (h History) Events() []duroxide.Event {
	var n int
	for _, x := range h.Executions {
		n += len(x.Events)
	}
	out := make([]duroxide.Event, 0, n)
	for _, x := range h.Executions {
		out = append(out, x.Events...)
	}
	return out
}

// WriteFile writes h to path as `cdb-admin export` does (the JSON
// document of History, indented), for ReadFile and ReadDir to read back: a
// test can record the histories of an environment's instances as testdata
// for later replays. It returns the error of encoding or writing.
func (h History) WriteFile(path string) error {
	data, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return fmt.Errorf("runtimetest: encode %q: %w", h.InstanceID, err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("runtimetest: %w", err)
	}
	return nil
}

// ErrNoHistory is wrapped by the errors of ReadFile and ReadDir for a file
// that holds no events, or a directory that holds no history file.
var ErrNoHistory = errors.New("no history")

// ReadFile reads one history file: either a `cdb-admin export` document
// (a JSON object, see History) or one execution's events as a JSON array
// in duroxide's serde format (`cdb-admin history -json`), whose instance
// and execution ids are taken from its first event. It returns an error
// for unreadable or malformed JSON, and one wrapping ErrNoHistory for a
// file without events.
func ReadFile(path string) (History, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return History{}, fmt.Errorf("runtimetest: %w", err)
	}
	h, err := parseHistory(data)
	if err != nil {
		return History{}, fmt.Errorf("runtimetest: %s: %w", path, err)
	}
	h.Source = path
	return h, nil
}

// parseHistory decodes an export document or an array of events.
func parseHistory(data []byte) (History, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	var h History
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		var events []duroxide.Event
		if err := json.Unmarshal(trimmed, &events); err != nil {
			return History{}, err
		}
		if len(events) == 0 {
			return History{}, fmt.Errorf("%w: an empty array of events", ErrNoHistory)
		}
		h = History{InstanceID: events[0].InstanceID, Executions: []Execution{{ExecutionID: events[0].ExecutionID, Events: events}}}
	case len(trimmed) > 0 && trimmed[0] == '{':
		if err := json.Unmarshal(trimmed, &h); err != nil {
			return History{}, err
		}
	default:
		return History{}, errors.New("neither a cdb-admin export document (a JSON object) nor an array of events")
	}
	if len(h.Events()) == 0 {
		return History{}, fmt.Errorf("%w: instance %q has no events", ErrNoHistory, h.InstanceID)
	}
	return h, nil
}

// ReadDir reads every history file (name ending in ".json") directly in
// dir, in name order, as ReadFile does; subdirectories and other files are
// ignored. It returns an error wrapping ErrNoHistory when there is none,
// so that a mistyped path does not pass as "nothing to replay".
func ReadDir(dir string) ([]History, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("runtimetest: %w", err)
	}
	var out []History
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		h, err := ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("runtimetest: %s: %w: no .json file", dir, ErrNoHistory)
	}
	return out, nil
}

// ReadProvider reads the histories of instances from p: every execution
// (ProviderAdmin.ListExecutions) of each, read with ReadWithExecution. With
// no instances it reads every instance p lists (ListInstances), in id
// order. p must implement duroxide.ProviderAdmin; an instance with no
// executions is an error wrapping ErrNoHistory. Errors of p are returned
// wrapped.
func ReadProvider(ctx context.Context, p duroxide.Provider, instances ...string) ([]History, error) {
	admin, ok := duroxide.AsManagementCapability(p)
	if !ok {
		return nil, errors.New("runtimetest: the provider does not implement duroxide.ProviderAdmin (ListInstances, ListExecutions)")
	}
	if len(instances) == 0 {
		all, err := admin.ListInstances(ctx)
		if err != nil {
			return nil, fmt.Errorf("runtimetest: list instances: %w", err)
		}
		instances = slices.Sorted(slices.Values(all))
	}
	out := make([]History, 0, len(instances))
	for _, id := range instances {
		execs, err := admin.ListExecutions(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("runtimetest: list executions of %q: %w", id, err)
		}
		if len(execs) == 0 {
			return nil, fmt.Errorf("runtimetest: instance %q: %w", id, ErrNoHistory)
		}
		h := History{InstanceID: id, Source: "provider"}
		for _, x := range execs {
			events, err := p.ReadWithExecution(ctx, id, x)
			if err != nil {
				return nil, fmt.Errorf("runtimetest: read %q execution %d: %w", id, x, err)
			}
			h.Executions = append(h.Executions, Execution{ExecutionID: x, Events: events})
		}
		out = append(out, h)
	}
	return out, nil
}
