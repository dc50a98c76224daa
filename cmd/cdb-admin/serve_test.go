package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serving runs cdb-admin serve on f's container with extra args and env
// until the test ends, and returns the dashboard's base URL.
func (f *fixture) serving(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	done := make(chan int, 1)
	full := append([]string{"-endpoint", f.srv.Endpoint(), "-key", f.srv.Key(), "-container", f.container, "serve", "-addr", "127.0.0.1:0"}, args...)
	go func() {
		done <- run(ctx, full, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			assert.Equal(t, exitOK, code, stderr.String())
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	re := regexp.MustCompile(`on (http://\S+)/\n`)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d: %s", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not start: %s", stderr.String())
	return ""
}

func get(t *testing.T, u string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestServeServesTheDashboardReadOnly(t *testing.T) {
	t.Parallel()
	f := seed(t)
	base := f.serving(t, nil)
	code, body := get(t, base+"/", nil)
	require.Equal(t, http.StatusOK, code)
	for _, id := range []string{helloID, failID, parentID, childID, waitID, eternalID} {
		assert.Contains(t, body, ">"+id+"<")
	}
	code, body = get(t, base+"/instance?id="+url.QueryEscape(waitID), nil)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "waiting for approval")
	assert.NotContains(t, body, "/action/")
	code, _ = get(t, base+"/action/cancel?id="+waitID, nil)
	assert.Equal(t, http.StatusForbidden, code)
	code, body = get(t, base+"/health", nil)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "answering")
}

func TestServeReadWriteNeedsTheToken(t *testing.T) {
	t.Parallel()
	f := seed(t)
	r := f.admin("", "serve", "-rw")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "DASHBOARD_TOKEN")
	base := f.serving(t, map[string]string{"DASHBOARD_TOKEN": "a-long-token"}, "-rw", "-prefix", "/ops")
	code, body := get(t, base+"/instance?id="+url.QueryEscape(waitID), nil)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "/ops/action/cancel?id=wait-1")
	code, _ = get(t, base+"/action/cancel?id="+waitID, nil)
	assert.Equal(t, http.StatusForbidden, code)
	code, body = get(t, base+"/action/cancel?id="+waitID, http.Header{"Authorization": {"Bearer a-long-token"}})
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `name="csrf"`)
}
