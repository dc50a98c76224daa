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

// fuzzDecoder seeds f with texts and fuzzes T's decoder with the
// properties above.
func fuzzDecoder[T any, P decodable[T]](f *testing.F, texts []string) {
	for _, text := range texts {
		f.Add([]byte(text))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v T
		if P(&v).UnmarshalJSON(data) != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q as %#v", data, v)
		}
		b, err := any(v).(json.Marshaler).MarshalJSON()
		if err != nil {
			t.Fatalf("decoded %q to %#v, which does not encode: %v", data, v, err)
		}
		if !json.Valid(b) || !utf8.Valid(b) {
			t.Fatalf("encoded %#v to invalid JSON %q", v, b)
		}
		var back T
		if err := P(&back).UnmarshalJSON(b); err != nil {
			t.Fatalf("re-decoding %q (from %q): %v", b, data, err)
		}
		if !reflect.DeepEqual(v, back) {
			t.Fatalf("round trip changed the value:\nfirst:  %#v\nsecond: %#v\ntext: %q", v, back, b)
		}
		b2, err := any(back).(json.Marshaler).MarshalJSON()
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("re-encoding is not stable: %q vs %q (%v)", b, b2, err)
		}
	})
}

// seeds collects the JSON texts of goldens and of error cases.
func seeds[G any](goldens []G, text func(G) string, bad map[string]string) []string {
	var out []string
	for _, g := range goldens {
		out = append(out, text(g))
	}
	for _, b := range bad {
		out = append(out, b)
	}
	return out
}

func FuzzEventUnmarshal(f *testing.F) {
	text := func(g goldenEvent) string { return g.json }
	fuzzDecoder[Event](f, append(seeds(goldenEvents, text, badEvents), seeds(eventDecodeOnly, text, nil)...))
}

func FuzzWorkItemUnmarshal(f *testing.F) {
	text := func(g goldenWorkItem) string { return g.json }
	fuzzDecoder[WorkItem](f, append(seeds(goldenWorkItems, text, badWorkItems), seeds(workItemDecodeOnly, text, nil)...))
}

func FuzzErrorDetailsUnmarshal(f *testing.F) {
	var texts []string
	for _, g := range goldenErrorDetails {
		texts = append(texts, g.json)
	}
	fuzzDecoder[ErrorDetails](f, texts)
}
