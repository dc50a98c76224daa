package emulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Per-request work the emulator does once instead of on every request:
// the keyed HMAC state for signature checks, the Date header of the
// current second, and the parse of the x-ms-date the clients sent last
// (every request of a second carries the same one).

// macPool holds HMAC-SHA256 states keyed with the server's master key,
// reset between uses.
type macPool struct {
	key  []byte
	pool sync.Pool
}

// sign returns the HMAC-SHA256 of payload under the master key, appended
// to buf.
func (m *macPool) sign(buf []byte, payload string) []byte {
	mac, _ := m.pool.Get().(hash.Hash)
	if mac == nil {
		mac = hmac.New(sha256.New, m.key)
	}
	mac.Write([]byte(payload))
	buf = mac.Sum(buf)
	mac.Reset()
	m.pool.Put(mac)
	return buf
}

// stampedText is a text computed for one Unix second or one input.
type stampedText struct {
	key  string // the input ("" for the Date header)
	sec  int64  // the second it was computed for
	text string
	t    time.Time
}

// dateCache keeps the last Date header and the last parsed x-ms-date.
type dateCache struct {
	header atomic.Pointer[stampedText]
	parsed atomic.Pointer[stampedText]
}

// httpDate returns now in the HTTP date format (second precision).
func (d *dateCache) httpDate(now time.Time) string {
	sec := now.Unix()
	if c := d.header.Load(); c != nil && c.sec == sec {
		return c.text
	}
	text := now.UTC().Format(http.TimeFormat)
	d.header.Store(&stampedText{sec: sec, text: text})
	return text
}

// parse returns parseHTTPDate(s), from the cache when s was the last date
// parsed.
func (d *dateCache) parse(s string) (time.Time, error) {
	if c := d.parsed.Load(); c != nil && c.key == s {
		return c.t, nil
	}
	t, err := parseHTTPDate(s)
	if err == nil {
		d.parsed.Store(&stampedText{key: s, t: t})
	}
	return t, err
}
