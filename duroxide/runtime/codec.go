package runtime

import (
	"encoding/json"
	"fmt"
)

// Encode turns a typed value into the string payload duroxide stores
// (duroxide's _typed_codec::Json::encode): a value that marshals to a JSON
// string is stored as the raw string (so "hi" stays hi, not "\"hi\""); any
// other value is stored as its JSON text. It returns an error when v cannot
// be marshalled.
func Encode(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("runtime: encode %T: %w", v, err)
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return "", fmt.Errorf("runtime: encode %T: %w", v, err)
		}
		return s, nil
	}
	return string(b), nil
}

// Decode turns a stored payload back into T (duroxide's
// _typed_codec::Json::decode): s is parsed as JSON first, and when that
// fails it is taken as a raw string value, the counterpart of Encode. It
// returns an error when neither reading fits T.
func Decode[T any](s string) (T, error) {
	var v T
	err := json.Unmarshal([]byte(s), &v)
	if err == nil {
		return v, nil
	}
	quoted, qerr := json.Marshal(s)
	if qerr == nil {
		var v2 T
		if json.Unmarshal(quoted, &v2) == nil {
			return v2, nil
		}
	}
	return v, fmt.Errorf("runtime: decode %T: %w", v, err)
}
