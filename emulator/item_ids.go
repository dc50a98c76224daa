package emulator

import (
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxItemIDBytes is the service's limit on an item id: 1,023 bytes (Learn:
// "Azure Cosmos DB service quotas", per-item limits, "Maximum length of id").
const maxItemIDBytes = 1023

// Item ids follow the routing gateway, as azcosmos v1.5.0's own emulator
// test TestItemIdEncodingRoutingGW records it (emulator_cosmos_item_test.go):
// a create (or upsert, or batch operation) accepts any non-empty string id
// up to 1,023 bytes, including '/', '\', '?', '#', control characters,
// percent-encoded sequences and trailing whitespace; but such an item cannot
// always be addressed by URL afterwards (point read, replace, delete, patch):
//
//   - an id ending with whitespace, or containing '/', '\', '#' or a
//     percent-encoded sequence such as "%20", gets 401 Unauthorized (the
//     gateway rewrites the path before it checks the signature);
//   - an id containing a control character (CR, LF, tab) gets 400;
//   - '?' and everything else work.
//
// Such items stay reachable by query, change feed and batch operations,
// which carry the id in the body.

// validateItemID checks the id of a document body.
func validateItemID(id string) *response {
	switch {
	case id == "":
		return badRequest("The input name presented is empty or missing an 'id' property.")
	case len(id) > maxItemIDBytes:
		return badRequest("The input name presented is too long. The id of an item must be at most 1023 bytes.")
	case !utf8.ValidString(id):
		return badRequest("The input name presented is not valid UTF-8.")
	}
	return nil
}

// urlAddressingRefusal returns the gateway's answer to a point operation
// whose URL names an item id the gateway cannot route, or nil.
func urlAddressingRefusal(id string) *response {
	if strings.IndexFunc(id, unicode.IsControl) >= 0 {
		return badRequest("The item id in the request URL contains a control character; the gateway cannot address it by URL. Use a query or a batch operation.")
	}
	unauthorized := func() *response {
		return errorResponse(http.StatusUnauthorized, 0,
			"The input authorization token can't serve the request. The item id in the URL ends with whitespace or contains '/', '\\', '#' or a percent-encoded sequence, which the gateway rewrites before checking the signature; such items can be reached by query or batch operations only.")
	}
	if strings.ContainsAny(id, `/\#`) {
		return unauthorized()
	}
	if r, _ := utf8.DecodeLastRuneInString(id); unicode.IsSpace(r) {
		return unauthorized()
	}
	for i := 0; i+2 < len(id); i++ {
		if id[i] == '%' && isHex(id[i+1]) && isHex(id[i+2]) {
			return unauthorized()
		}
	}
	return nil
}
