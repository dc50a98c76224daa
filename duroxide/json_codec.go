package duroxide

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// This file holds what the MarshalJSON and UnmarshalJSON methods of the
// package share: parse-then-decode with the error prefix, encode with the
// error prefix, and the checks of values Rust could not hold.

// unmarshalValue parses data and decodes it with decode into *dst, which is
// left untouched on error. A nil dst is a *json.InvalidUnmarshalError, as
// json.Unmarshal reports it, rather than a panic.
func unmarshalValue[T any](data []byte, mode parseMode, what string, decode func(*jsonValue) (T, error), dst *T) error {
	if dst == nil {
		return fmt.Errorf("duroxide: decode %s: %w", what, &json.InvalidUnmarshalError{Type: reflect.TypeOf(dst)})
	}
	v, err := parseJSON(data, mode)
	if err != nil {
		return fmt.Errorf("duroxide: decode %s: %w", what, err)
	}
	out, err := decode(&v)
	if err != nil {
		return fmt.Errorf("duroxide: decode %s: %w", what, err)
	}
	*dst = out
	return nil
}

// marshalValue runs an append-style encoder into a fresh buffer, wrapping
// its error for what.
func marshalValue[T any](what string, v T, appendTo func([]byte, T) ([]byte, error)) ([]byte, error) {
	b, err := appendTo(nil, v)
	if err != nil {
		return nil, fmt.Errorf("duroxide: encode %s: %w", what, err)
	}
	return b, nil
}

// checkKind rejects a nil Kind and a pointer to a kind type (whose methods
// would dereference it) before anything calls a method on it.
func checkKind(kind any) error {
	if kind == nil {
		return errors.New("nil Kind")
	}
	if reflect.TypeOf(kind).Kind() == reflect.Pointer {
		return fmt.Errorf("unsupported kind type %T (use the value, not a pointer)", kind)
	}
	return nil
}

// countSet counts the true values.
func countSet(set ...bool) int {
	n := 0
	for _, s := range set {
		if s {
			n++
		}
	}
	return n
}
