package emulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDateCache(t *testing.T) {
	var d dateCache
	at := time.Date(2026, 11, 21, 10, 0, 0, 100, time.UTC)
	require.Equal(t, "Sat, 21 Nov 2026 10:00:00 GMT", d.httpDate(at))
	require.Equal(t, "Sat, 21 Nov 2026 10:00:00 GMT", d.httpDate(at.Add(900*time.Millisecond)), "same second")
	require.Equal(t, "Sat, 21 Nov 2026 10:00:01 GMT", d.httpDate(at.Add(time.Second)))

	for _, s := range []string{"Sat, 21 Nov 2026 10:00:00 GMT", "Sat, 21 Nov 2026 10:00:00 GMT", "Sat, 21 Nov 2026 10:00:05 GMT"} {
		got, err := d.parse(s)
		require.NoError(t, err)
		want, _ := http.ParseTime(s)
		require.True(t, want.Equal(got), s)
	}
	_, err := d.parse("not a date")
	require.Error(t, err)
	_, err = d.parse("not a date")
	require.Error(t, err, "errors are not cached")
}

func TestMacPoolSignsLikeHMAC(t *testing.T) {
	key := []byte("0123456789abcdef")
	m := &macPool{key: key}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				payload := string(rune('a'+i)) + string(rune('a'+j))
				mac := hmac.New(sha256.New, key)
				mac.Write([]byte(payload))
				if !hmac.Equal(mac.Sum(nil), m.sign(nil, payload)) {
					t.Errorf("signature of %q differs", payload)
				}
			}
		})
	}
	wg.Wait()
}
