package emulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxClockSkew is how far x-ms-date may be from the server clock; the service
// rejects older or newer signatures with 403.
const maxClockSkew = 15 * time.Minute

// authorize checks the master-key signature of rq. It returns nil when the
// request is authorized, otherwise the service's 401 (bad or missing token)
// or 403 (date outside the allowed skew) answer.
func (s *Server) authorize(rq *request) *response {
	r := rq.r
	date := r.Header.Get("x-ms-date")
	if date == "" {
		date = r.Header.Get("Date")
	}
	auth := r.Header.Get("Authorization")
	if auth == "" || date == "" {
		return errorResponse(http.StatusUnauthorized, 0,
			"Required Header authorization is missing. Ensure a valid Authorization token is passed.")
	}
	decoded, err := url.QueryUnescape(auth)
	if err != nil {
		return unauthorized("")
	}
	var typ, ver, sig string
	for _, part := range strings.Split(decoded, "&") {
		k, v, _ := strings.Cut(part, "=")
		switch strings.ToLower(k) {
		case "type":
			typ = v
		case "ver":
			ver = v
		case "sig":
			sig = v
		}
	}
	payload := strings.ToLower(r.Method) + "\n" + rq.resType + "\n" + rq.resLink + "\n" + strings.ToLower(date) + "\n\n"
	if !strings.EqualFold(typ, "master") || ver != "1.0" || sig == "" {
		return unauthorized(payload)
	}
	got, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return unauthorized(payload)
	}
	var sum [sha256.Size]byte
	if !hmac.Equal(got, s.macs.sign(sum[:0], payload)) {
		return unauthorized(payload)
	}
	t, err := s.dates.parse(date)
	if err != nil {
		return unauthorized(payload)
	}
	if d := s.now().Sub(t); d > maxClockSkew || d < -maxClockSkew {
		return errorResponse(http.StatusForbidden, 0,
			"The authorization token is not valid at the current time. Please create another token and retry (token start time: "+
				t.UTC().Format(http.TimeFormat)+", current server time: "+s.now().UTC().Format(http.TimeFormat)+").")
	}
	return nil
}

func unauthorized(payload string) *response {
	msg := "The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol. For more info: https://aka.ms/cosmosdb-tsg-mac-signature"
	if payload != "" {
		msg += "\r\nServer used the following payload to sign: '" + payload + "'"
	}
	return errorResponse(http.StatusUnauthorized, 0, msg)
}
