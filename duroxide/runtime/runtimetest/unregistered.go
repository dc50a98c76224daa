package runtimetest

// The unregistered-name check: an orchestration or activity that is
// neither registered nor mocked stops the test at once, naming the
// registered names closest to it.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrNotRegistered is wrapped by the error that stops a test whose code
// calls an orchestration or activity neither registered nor mocked.
var ErrNotRegistered = errors.New("neither registered nor mocked")

// unregistered is the runtime's OnUnregistered hook: the first such name
// fails the test (t.Errorf, from the runtime's goroutine) and stops every
// wait of the environment, which then stops the test with the same
// message.
func (e *Env) unregistered(kind, name, instance string) {
	e.mu.Lock()
	first := !e.stopped
	e.stopped = true
	e.mu.Unlock()
	if !first || e.ctx.Err() != nil {
		return
	}
	err := e.notRegistered(kind, name, instance)
	e.t.Errorf("%v", err) // before the waits stop and the test goes on
	e.cancel(err)
}

// problem returns the unregistered-name error that stopped the
// environment, or nil.
func (e *Env) problem() error {
	if err := context.Cause(e.ctx); err != nil && errors.Is(err, ErrNotRegistered) {
		return err
	}
	return nil
}

// notRegistered is the error for name of kind ("orchestration" or
// "activity") called by instance.
func (e *Env) notRegistered(kind, name, instance string) error {
	var known []string
	if kind == "activity" {
		known = e.registry.ActivityNames()
	} else {
		known = e.registry.OrchestrationNames()
	}
	hint := "none is registered"
	if close := closestNames(name, known); len(close) > 0 {
		hint = "did you mean " + quoteAll(close) + "?"
	} else if len(known) > 0 {
		hint = "registered: " + quoteAll(known[:min(len(known), 10)])
	}
	return fmt.Errorf("runtimetest: %s %q (called by instance %q) is %w: %s", kind, name, instance, ErrNotRegistered, hint)
}

// closestNames returns up to three of known nearest to name by edit
// distance (case-insensitive), nearest first, within a third of name's
// length (at least 2 edits).
func closestNames(name string, known []string) []string {
	type scored struct {
		name string
		d    int
	}
	limit := max(2, len(name)/3)
	var out []scored
	for _, k := range known {
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d <= limit {
			out = append(out, scored{k, d})
		}
	}
	slices.SortFunc(out, func(a, b scored) int { return cmp.Or(cmp.Compare(a.d, b.d), cmp.Compare(a.name, b.name)) })
	names := make([]string, 0, 3)
	for _, s := range out[:min(len(out), 3)] {
		names = append(names, s.name)
	}
	return names
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
