package cosmos

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// Answer is what Cosmos DB said when it refused a request: the HTTP
// status, the substatus (x-ms-substatus: 1003 is a missing container,
// 3200 throttling, 1002 a read session not yet available ...), the error
// code and the message of the service's JSON body
// ({"code": "BadRequest", "message": "..."}), without the diagnostics the
// service appends (ActivityId, Request URI, RequestStats).
type Answer struct {
	Status    int
	SubStatus int
	Code      string
	Message   string
}

// String returns the answer as one line: "400 Bad Request: Operation
// type 'Patch' is not supported in Batch.", with "(substatus 1003)" after
// the status when there is one.
func (a Answer) String() string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(a.Status))
	if t := http.StatusText(a.Status); t != "" {
		b.WriteString(" " + t)
	}
	if a.SubStatus != 0 {
		b.WriteString(" (substatus " + strconv.Itoa(a.SubStatus) + ")")
	}
	if a.Message != "" {
		b.WriteString(": " + a.Message)
	}
	return b.String()
}

// maxMessage bounds the message an Answer keeps (a query's error can
// carry a long syntax report).
const maxMessage = 500

// ParseAnswer reads an error answer from its status, headers and body.
// A body that is not the service's JSON shape leaves Code empty and keeps
// its text (trimmed) as the message.
func ParseAnswer(status int, h http.Header, body []byte) Answer {
	a := Answer{Status: status}
	if h != nil {
		a.SubStatus, _ = strconv.Atoi(h.Get("x-ms-substatus"))
	}
	var shaped struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &shaped) == nil && (shaped.Code != "" || shaped.Message != "") {
		a.Code, a.Message = shaped.Code, cleanMessage(shaped.Message)
	} else {
		a.Message = cleanMessage(string(body))
	}
	return a
}

// AnswerOf returns the service's answer an error carries (an
// *azcore.ResponseError anywhere in its chain), and false when err holds
// none (a transport failure, a cancelled context).
func AnswerOf(err error) (Answer, bool) {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return Answer{}, false
	}
	if re.RawResponse == nil {
		return Answer{Status: re.StatusCode, Code: re.ErrorCode}, true
	}
	// Payload returns the body azcore already read into memory for the
	// ResponseError (and reads it once when not).
	body, _ := runtime.Payload(re.RawResponse)
	a := ParseAnswer(re.StatusCode, re.RawResponse.Header, body)
	if a.Code == "" {
		a.Code = re.ErrorCode
	}
	return a, true
}

// cleanMessage cuts the diagnostics the service appends to its messages
// ("\r\nActivityId: ..., Request URI: ..., RequestStats: ...") and
// unwraps the gateway's `Message: {"Errors":["..."]}` form.
func cleanMessage(m string) string {
	for _, cut := range []string{"\r\nActivityId:", "\nActivityId:", ", Request URI:", "\r\nRequestStartTime:"} {
		if i := strings.Index(m, cut); i >= 0 {
			m = m[:i]
		}
	}
	m = strings.TrimSpace(m)
	if rest, ok := strings.CutPrefix(m, "Message: "); ok {
		var inner struct{ Errors []string }
		if json.Unmarshal([]byte(rest), &inner) == nil && len(inner.Errors) > 0 {
			m = strings.Join(inner.Errors, "; ")
		} else {
			m = rest
		}
	}
	m = strings.Join(strings.Fields(m), " ")
	if len(m) > maxMessage {
		// Cut at a byte count, then drop a rune the cut split, so that the
		// message stays valid UTF-8 (it goes into JSON logs and errors).
		m = strings.ToValidUTF8(m[:maxMessage], "") + "..."
	}
	return m
}

// Describe says in a few words why a request failed, for logs and
// errors: the service's answer (status, substatus and message), or the
// kind of transport failure (TransportKind) with the transport's own
// words, without the method and URL the HTTP client adds: "connection
// refused (dial tcp 127.0.0.1:8081: connect: connection refused)".
func Describe(err error) string {
	if err == nil {
		return ""
	}
	if a, ok := AnswerOf(err); ok {
		return a.String()
	}
	detail := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		detail = ue.Err.Error()
	}
	kind := TransportKind(err)
	if kind == "" || strings.HasPrefix(detail, kind) {
		return detail
	}
	return kind + " (" + detail + ")"
}

// TransportKind names the kind of a failure that got no answer: "connection
// refused" (nothing listens at the endpoint: it is stopped, or the
// address is wrong), "host name not found (DNS)", "TLS certificate not
// trusted", "TLS handshake failed", "network unreachable", "connection
// reset", "connection closed", "timeout"; "" for anything else.
func TransportKind(err error) string {
	var (
		dns       *net.DNSError
		unknownCA x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostname  x509.HostnameError
		verify    *tls.CertificateVerificationError
		record    tls.RecordHeaderError
		netErr    net.Error
	)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &dns):
		return "host name not found (DNS)"
	case errors.As(err, &unknownCA), errors.As(err, &invalid), errors.As(err, &hostname), errors.As(err, &verify):
		return "TLS certificate not trusted"
	case errors.As(err, &record):
		return "TLS handshake failed"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETDOWN):
		return "network unreachable"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	}
	return ""
}
