package docs

import (
	"encoding/json"
	"testing"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

func TestPinnedVersionRoundTripsAndKeepsItsJSONNames(t *testing.T) {
	t.Parallel()
	if PinnedFrom(nil) != nil {
		t.Fatal("PinnedFrom(nil) is not nil")
	}
	v := duroxide.Version{Major: 1, Minor: 2, Patch: 3}
	p := PinnedFrom(&v)
	if got := p.ToVersion(); got != v {
		t.Fatalf("round trip: %+v, want %+v", got, v)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"major":1,"minor":2,"patch":3}` {
		t.Fatalf("stored as %s", b)
	}
}
