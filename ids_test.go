package cdb

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// TestDispatchSlotGolden pins the dispatch slot function: 32-bit FNV-1a of
// the UTF-8 instance id, modulo 256. Every process and every release must
// agree on these values (computed independently of this package).
func TestDispatchSlotGolden(t *testing.T) {
	golden := map[string]uint8{
		"":               197, // 0x811c9dc5
		"a":              44,  // 0xe40c292c
		"order-123":      26,  // 0xa508cf1a
		"user-456":       244, // 0x58e2c8f4
		"instance-A":     132, // 0x4a92b884
		"sub::parent::1": 212, // 0x8b4f92d4
		`ünïcødé/\?#`:    101, // 0xbc923365
		"订单-42":          145, // 0xce190291
	}
	for id, want := range golden {
		assert.Equal(t, want, DispatchSlot(id), "slot of %q", id)
	}
}

// TestDispatchSlotSpread checks that the hash spreads ordinary ids over all
// 256 slots (a constant or truncated hash would not).
func TestDispatchSlotSpread(t *testing.T) {
	seen := map[uint8]bool{}
	for i := 0; i < 10000; i++ {
		seen[DispatchSlot("instance-"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+itoa(i))] = true
	}
	assert.Len(t, seen, NumDispatchSlots)
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// TestEncodeIDPart checks that any text becomes a legal, bounded id part,
// and that distinct texts stay distinct.
func TestEncodeIDPart(t *testing.T) {
	inputs := []string{"", "session-1", `a/b\c?d#e`, "ünïcødé", strings.Repeat("x", 149), strings.Repeat("x", 150), strings.Repeat("€", 3000), "\x00\n\"'"}
	seen := map[string]string{}
	for _, in := range inputs {
		out := encodeIDPart(in)
		assert.LessOrEqual(t, len(out), 201, "length of the part for %q", in)
		assert.False(t, strings.ContainsAny(out, `/\?#"' `), "illegal character in %q", out)
		if prev, dup := seen[out]; dup {
			t.Fatalf("%q and %q encode to the same part %q", prev, in, out)
		}
		seen[out] = in
	}
	assert.Equal(t, "b", encodeIDPart("")[:1])
	assert.Equal(t, "h", encodeIDPart(strings.Repeat("€", 3000))[:1], "long text is hashed")
	assert.LessOrEqual(t, len(sessionDocID(strings.Repeat("€", 3000))), 255)
}

// TestDocumentIDs checks the fixed formats of document ids.
func TestDocumentIDs(t *testing.T) {
	assert.Equal(t, "hist-00000000000000000001-00000000000000000042", historyDocID(1, 42))
	assert.Equal(t, "exec-00000000000000000007", executionDocID(7))
	assert.Equal(t, "wq-00000000000000000001-00000000000000000003", workerDocID(1, 3))
	assert.Less(t, historyDocID(1, 9), historyDocID(1, 10), "ids sort numerically")
	assert.Len(t, historyDocID(^uint64(0), ^uint64(0)), 46)
	lock := newLockID()
	assert.True(t, isLockID(lock), "lock id %q", lock)
	assert.Equal(t, "oq-"+lock+"-3", ackQueueDocID(lock, 3))
	assert.Equal(t, "intent-"+lock+"-0", intentDocID(lock, 0))
	a, b := newSeq(), newSeq()
	assert.Less(t, a, b, "sequence keys are increasing")
}

// TestLockTokensRoundTrip checks that lock tokens carry any instance id.
func TestLockTokensRoundTrip(t *testing.T) {
	for _, inst := range []string{"i", `a/b\c?d#e.f`, "ünïcødé 订单", strings.Repeat("z", MaxInstanceIDBytes)} {
		lock := newLockID()
		gotInst, gotLock, ok := parseOrchLockToken(orchLockToken(inst, lock))
		require.True(t, ok)
		assert.Equal(t, inst, gotInst)
		assert.Equal(t, lock, gotLock)

		wi, wd, wl, ok := parseWorkerLockToken(workerLockToken(inst, workerDocID(2, 5), lock))
		require.True(t, ok)
		assert.Equal(t, []string{inst, workerDocID(2, 5), lock}, []string{wi, wd, wl})

		_, _, ok = parseOrchLockToken(workerLockToken(inst, workerDocID(2, 5), lock))
		assert.False(t, ok, "a worker token is not an orchestration token")
	}
	for _, bad := range []string{"", "o", "o..", "o.aW5zdA." + "NOTHEX" + strings.Repeat("0", 26), "x.aW5zdA." + newLockID(), "o.!!!." + newLockID()} {
		_, _, ok := parseOrchLockToken(bad)
		assert.False(t, ok, "token %q", bad)
		_, _, _, ok = parseWorkerLockToken(bad)
		assert.False(t, ok, "token %q", bad)
	}
}

// TestValidateInstanceID checks the up-front instance id rules.
func TestValidateInstanceID(t *testing.T) {
	require.NoError(t, validateInstanceID("op", strings.Repeat("a", MaxInstanceIDBytes)))
	require.NoError(t, validateInstanceID("op", `a/b\c?d#e ünï`))
	for _, bad := range []string{"", strings.Repeat("a", MaxInstanceIDBytes+1), "\xff\xfe"} {
		err := validateInstanceID("op", bad)
		var pe *duroxide.ProviderError
		require.True(t, errors.As(err, &pe), "id of %d bytes", len(bad))
		assert.False(t, pe.Retryable)
		assert.Equal(t, "op", pe.Operation)
	}
}
