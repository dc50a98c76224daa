package duroxide

import (
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
