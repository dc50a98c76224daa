package emulator

import (
	"net/http"
	"strings"
)

// notEmulatedKinds names the resource kinds the emulator refuses outright,
// by the path segment that addresses them.
var notEmulatedKinds = map[string]string{
	"sprocs":      "stored procedures",
	"triggers":    "triggers",
	"udfs":        "user-defined functions",
	"users":       "users",
	"permissions": "permissions",
}

// notEmulated answers a request for a resource kind the emulator does not
// implement (server-side JavaScript, users and permissions) with 501 Not
// Implemented, code "NotImplemented" and a message naming the kind. It is not
// a 404: a client must not take it for "container not found" (404 with
// substatus 1003) or "item not found", and no SDK retries a 501.
func notEmulated(kind string) func(*request) *response {
	return func(rq *request) *response {
		return errorResponse(http.StatusNotImplemented, 0,
			"The emulator does not implement "+kind+" (request /"+strings.Join(rq.segs, "/")+
				"); use the Azure Cosmos DB service or the official emulator for them.")
	}
}
