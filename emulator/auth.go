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

// authorize checks the authorization of rq: a master-key signature
// (type=master), or a Microsoft Entra ID token (type=aad), which the
// emulator, like the official one, accepts without checking its issuer or
// signature (it has no tenant to ask) once it is a well-formed JWT; the
// date must be within maxClockSkew either way. It returns nil when the
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
	switch {
	case ver != "1.0" || sig == "":
		return unauthorized(payload)
	case strings.EqualFold(typ, "aad"):
		if !wellFormedJWT(sig) {
			return errorResponse(http.StatusUnauthorized, 0, "The Microsoft Entra ID token in the authorization header is not a well-formed JWT.")
		}
	case strings.EqualFold(typ, "master"):
		got, err := base64.StdEncoding.DecodeString(sig)
		if err != nil {
			return unauthorized(payload)
		}
		var sum [sha256.Size]byte
		if !hmac.Equal(got, s.macs.sign(sum[:0], payload)) {
			return unauthorized(payload)
		}
	default:
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

// wellFormedJWT reports whether token is three base64url segments whose
// first is a JSON object (a JWT's header).
func wellFormedJWT(token string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[1] == "" {
		return false
	}
	header, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[0], "="))
	if err != nil {
		return false
	}
	v, err := parseJSON(header)
	return err == nil && v.k == kObject
}

func unauthorized(payload string) *response {
	msg := "The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol. For more info: https://aka.ms/cosmosdb-tsg-mac-signature"
	if payload != "" {
		msg += "\r\nServer used the following payload to sign: '" + payload + "'"
	}
	return errorResponse(http.StatusUnauthorized, 0, msg)
}
