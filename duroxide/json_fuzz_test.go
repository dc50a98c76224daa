package duroxide

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

// The fuzz tests check the decoders on arbitrary input: they never panic;
// they accept only valid JSON; and whatever they accept encodes to valid
// UTF-8 JSON that decodes back to an equal value and re-encodes to the
// same bytes.

// codec is what roundTrip needs of a decoded type.
type codec interface {
	MarshalJSON() ([]byte, error)
}

// roundTrip checks the properties above for v, decoded from data; decode
// decodes a text into a new value.
func roundTrip[T codec](t *testing.T, data []byte, v T, decode func([]byte) (T, error)) {
	t.Helper()
	if !json.Valid(data) {
		t.Fatalf("accepted invalid JSON %q as %#v", data, v)
	}
	b, err := v.MarshalJSON()
	if err != nil {
		t.Fatalf("decoded %q to %#v, which does not encode: %v", data, v, err)
	}
	if !json.Valid(b) || !utf8.Valid(b) {
		t.Fatalf("encoded %#v to invalid JSON %q", v, b)
	}
	back, err := decode(b)
	if err != nil {
		t.Fatalf("re-decoding %q (from %q): %v", b, data, err)
	}
	if !reflect.DeepEqual(v, back) {
		t.Fatalf("round trip changed the value:\nfirst:  %#v\nsecond: %#v\ntext: %q", v, back, b)
	}
	b2, err := back.MarshalJSON()
	if err != nil || !bytes.Equal(b, b2) {
		t.Fatalf("re-encoding is not stable: %q vs %q (%v)", b, b2, err)
	}
}

func FuzzEventUnmarshal(f *testing.F) {
	for _, g := range goldenEvents {
		f.Add([]byte(g.json))
	}
	for _, g := range eventDecodeOnly {
		f.Add([]byte(g.json))
	}
	for _, text := range badEvents {
		f.Add([]byte(text))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var e Event
		if e.UnmarshalJSON(data) != nil {
			return
		}
		roundTrip(t, data, e, func(b []byte) (Event, error) {
			var back Event
			err := back.UnmarshalJSON(b)
			return back, err
		})
	})
}

func FuzzWorkItemUnmarshal(f *testing.F) {
	for _, g := range goldenWorkItems {
		f.Add([]byte(g.json))
	}
	for _, g := range workItemDecodeOnly {
		f.Add([]byte(g.json))
	}
	for _, text := range badWorkItems {
		f.Add([]byte(text))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var w WorkItem
		if w.UnmarshalJSON(data) != nil {
			return
		}
		roundTrip(t, data, w, func(b []byte) (WorkItem, error) {
			var back WorkItem
			err := back.UnmarshalJSON(b)
			return back, err
		})
	})
}
