package cosmos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// The service's answer is read from its JSON body without the diagnostics
// it appends, in both of the forms it uses.
func TestParseAnswerKeepsTheServicesMessage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		body string
		want string
	}{
		{`{"code":"BadRequest","message":"Operation type 'Patch' is not supported in Batch.\r\nActivityId: 1a2b, Microsoft.Azure.Documents.Common/2.14.0"}`,
			"400 Bad Request (substatus 1001): Operation type 'Patch' is not supported in Batch."},
		{`{"code":"BadRequest","message":"Message: {\"Errors\":[\"One of the specified inputs is invalid\"]}\r\nActivityId: 9, Request URI: /apps/x, RequestStats: y"}`,
			"400 Bad Request (substatus 1001): One of the specified inputs is invalid"},
		{`upstream connect error`, "400 Bad Request (substatus 1001): upstream connect error"},
	}
	h := http.Header{"X-Ms-Substatus": {"1001"}}
	for _, c := range cases {
		if got := ParseAnswer(400, h, []byte(c.body)).String(); got != c.want {
			t.Errorf("ParseAnswer(%q) = %q, want %q", c.body, got, c.want)
		}
	}
}

// A long message is cut, and never inside a character: a query's error
// can quote the query, which may hold any text.
func TestALongMessageIsCutOnACharacter(t *testing.T) {
	t.Parallel()
	m := ParseAnswer(400, nil, []byte("x"+strings.Repeat("é", maxMessage))).Message
	if !utf8.ValidString(m) || !strings.HasSuffix(m, "...") || len(m) > maxMessage+len("...") {
		t.Errorf("cut message %q (%d bytes), want valid UTF-8 of at most %d bytes and \"...\"", m, len(m), maxMessage+3)
	}
}

// AnswerOf reads the answer inside an *azcore.ResponseError, however
// wrapped, and Describe names it.
func TestAnswerOfAResponseError(t *testing.T) {
	t.Parallel()
	resp := &http.Response{StatusCode: 503, Header: http.Header{"X-Ms-Substatus": {"21008"}},
		Body: io.NopCloser(bytes.NewBufferString(`{"code":"ServiceUnavailable","message":"Service is currently unavailable."}`))}
	err := fmt.Errorf("query: %w", runtime.NewResponseError(resp))
	a, ok := AnswerOf(err)
	if !ok || a.Status != 503 || a.SubStatus != 21008 || a.Code != "ServiceUnavailable" {
		t.Fatalf("AnswerOf = %+v, %v", a, ok)
	}
	if got, want := Describe(err), "503 Service Unavailable (substatus 21008): Service is currently unavailable."; got != want {
		t.Fatalf("Describe = %q, want %q", got, want)
	}
}

// A failure without an answer is named by its kind, in the transport's
// words without the method and URL.
func TestDescribeNamesTransportFailures(t *testing.T) {
	t.Parallel()
	op := &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "x"}}
	cases := []struct {
		err  error
		want string
	}{
		{&url.Error{Op: "Post", URL: "http://127.0.0.1:1/dbs", Err: &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("connect: %w", syscall.ECONNREFUSED)}},
			"connection refused (dial tcp: connect: connection refused)"},
		{&url.Error{Op: "Get", URL: "https://nowhere.invalid/", Err: &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}},
			"host name not found (DNS) (lookup nowhere.invalid: no such host)"},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), "connection closed (read: unexpected EOF)"},
		{context.DeadlineExceeded, "timeout (context deadline exceeded)"},
		{op, op.Error()},
	}
	for _, c := range cases {
		if got := Describe(c.err); got != c.want {
			t.Errorf("Describe(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// A hidden transport failure is invisible to errors.Is until revealed,
// and then visible through any wrapping.
func TestHideFromSDKUntilRevealed(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("sdk: %w", HideFromSDK(fmt.Errorf("dial: %w", syscall.ECONNREFUSED)))
	if errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatal("the SDK sees the hidden failure")
	}
	if Reveal(err); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatal("the revealed failure is not visible")
	}
	if HideFromSDK(nil) != nil || Reveal(nil) != nil {
		t.Fatal("nil is not kept")
	}
}
