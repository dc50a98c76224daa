package emulator

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestEntraIDTokensAreAccepted: like the official emulator, the emulator
// accepts a Microsoft Entra ID token (type=aad) that is a well-formed JWT
// without asking a tenant; a malformed one gets 401, and a master-key
// signature with the wrong key 401 as before.
func TestEntraIDTokensAreAccepted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seg := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	jwt := seg(`{"alg":"RS256","typ":"JWT"}`) + "." + seg(`{"aud":"https://localhost","oid":"someone"}`) + "." + seg("signature")
	auth := func(typ, sig string) map[string]string {
		return map[string]string{"Authorization": url.QueryEscape("type=" + typ + "&ver=1.0&sig=" + sig)}
	}
	for name, tc := range map[string]struct {
		headers map[string]string
		want    int
	}{
		"entra id token":           {auth("aad", jwt), http.StatusOK},
		"malformed entra id":       {auth("aad", "not-a-jwt"), http.StatusUnauthorized},
		"entra id header not json": {auth("aad", seg("nope")+"."+seg("{}")+"."+seg("s")), http.StatusUnauthorized},
		"wrong master signature":   {auth("master", base64.StdEncoding.EncodeToString([]byte("wrong"))), http.StatusUnauthorized},
		"unknown token type":       {auth("resource", jwt), http.StatusUnauthorized},
	} {
		status, _, body := e.raw(http.MethodGet, "", nil, tc.headers)
		assert.Equal(t, tc.want, status, "%s: %s", name, body)
	}
}
