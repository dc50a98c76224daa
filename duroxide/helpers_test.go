package duroxide

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// The tests of this package use only the standard library, so that they
// run whatever the module's go.sum holds.

// mustNoError stops the test when err is not nil.
func mustNoError(t testing.TB, err error, context ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%sunexpected error: %v", prefix(context), err)
	}
}

// mustError stops the test when err is nil.
func mustError(t testing.TB, err error, context ...any) {
	t.Helper()
	if err == nil {
		t.Fatalf("%sexpected an error, got nil", prefix(context))
	}
}

// checkEqual reports a failure when got is not deeply equal to want.
func checkEqual[T any](t testing.TB, want, got T, context ...any) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%snot equal:\nwant: %#v\ngot:  %#v", prefix(context), want, got)
	}
}

func prefix(context []any) string {
	if len(context) == 0 {
		return ""
	}
	return fmt.Sprint(context...) + ": "
}

// decodable is a pointer to a T that decodes itself.
type decodable[T any] interface {
	*T
	json.Unmarshaler
}

// checkEncode checks that value encodes to exactly text, through its
// MarshalJSON and through an encoding/json Encoder without HTML escaping.
func checkEncode(t *testing.T, value json.Marshaler, text string) {
	t.Helper()
	got, err := value.MarshalJSON()
	mustNoError(t, err)
	checkEqual(t, text, string(got))

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	mustNoError(t, enc.Encode(value))
	checkEqual(t, text+"\n", buf.String())
}

// checkDecode checks that text decodes, through json.Unmarshal, to want.
func checkDecode[T any, P decodable[T]](t *testing.T, text string, want T) {
	t.Helper()
	var got T
	mustNoError(t, json.Unmarshal([]byte(text), P(&got)))
	checkEqual(t, want, got)
}

// checkDecodeFails checks that text does not decode, through UnmarshalJSON
// and through json.Unmarshal, and that the target keeps its value.
func checkDecodeFails[T any, P decodable[T]](t *testing.T, text string, sentinel T) {
	t.Helper()
	got := sentinel
	mustError(t, P(&got).UnmarshalJSON([]byte(text)), "UnmarshalJSON")
	checkEqual(t, sentinel, got)
	got = sentinel
	mustError(t, json.Unmarshal([]byte(text), P(&got)), "json.Unmarshal")
	checkEqual(t, sentinel, got)
}
