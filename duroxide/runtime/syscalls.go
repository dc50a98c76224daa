package runtime

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// resolveActivity returns the user's activity, or one of duroxide's
// built-in system activities (new_guid, utc_now_ms, get_kv_value) that
// NewGUID, UtcNow and GetKVValueFromInstance schedule.
func (r *Runtime) resolveActivity(name string) (ActivityFunc, bool) {
	switch name {
	case syscallNewGUID:
		return func(*ActivityContext, string) (string, error) { return newGUID(), nil }, true
	case syscallUtcNowMs:
		return func(*ActivityContext, string) (string, error) {
			return strconv.FormatInt(r.now().UnixMilli(), 10), nil
		}, true
	case syscallGetKVValue:
		return getKVValueActivity, true
	}
	return r.registry.resolveActivity(name)
}

// now reads the runtime's clock (Options.Now, time.Now by default).
func (r *Runtime) now() time.Time {
	if r.opts.Now != nil {
		return r.opts.Now()
	}
	return time.Now()
}

// newGUID returns a random (version 4) UUID in its canonical text form.
func newGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// getKVValueActivity reads another instance's KV value; its result is the
// JSON of an optional string (null when absent), as duroxide's.
func getKVValueActivity(ctx *ActivityContext, input string) (string, error) {
	var in struct {
		InstanceID *string `json:"instance_id"`
		Key        *string `json:"key"`
	}
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		return "", fmt.Errorf("get_kv_value: invalid input: %w", err)
	}
	if in.InstanceID == nil {
		return "", fmt.Errorf("get_kv_value: missing instance_id")
	}
	if in.Key == nil {
		return "", fmt.Errorf("get_kv_value: missing key")
	}
	v, ok, err := ctx.Client().GetKVValue(ctx, *in.InstanceID, *in.Key)
	if err != nil {
		return "", fmt.Errorf("get_kv_value client error: %w", err)
	}
	if !ok {
		return "null", nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("get_kv_value serialization error: %w", err)
	}
	return string(b), nil
}
