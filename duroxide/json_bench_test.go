package duroxide

import "testing"

// benchEvent is a typical history event with a small JSON payload.
var benchEvent = ev(7, Uint64Ptr(6), ActivityCompleted{Result: `{"order":"order-123","items":[1,2,3],"total":42.5,"note":"ok"}`})

func BenchmarkEventMarshalJSON(b *testing.B) {
	for b.Loop() {
		if _, err := benchEvent.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEventUnmarshalJSON(b *testing.B) {
	data, err := benchEvent.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var e Event
		if err := e.UnmarshalJSON(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWorkItemUnmarshalJSON(b *testing.B) {
	data := []byte(goldenWorkItems[0].json)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var w WorkItem
		if err := w.UnmarshalJSON(data); err != nil {
			b.Fatal(err)
		}
	}
}
