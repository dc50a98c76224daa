// Package dashboard is a web dashboard for duroxide orchestrations: an
// http.Handler (html/template and embed, no JavaScript) that a service
// mounts under a prefix, in the shape of river's riverui, and that
// cdb-admin serve serves for the account in the environment.
//
//	h, err := dashboard.NewHandler(dashboard.Options{Admin: provider, Prefix: "/dashboard"})
//	defer h.Close()
//	mux.Handle("/dashboard/", h)
//
// It works on any duroxide.ProviderAdmin; a *cdb.Provider adds the health
// and cost page. The pages:
//
//   - / lists the instances with filters by status (tabs, with the count
//     of each status when the listing brings them), orchestration name (a
//     substring, ignoring case), id prefix and creation time, a page at a
//     time (Options.PageSize), newest first (&order=oldest, or store: the
//     provider's cheapest order). Each row shows the id (cut on one line,
//     whole on hover and on the instance's page), the orchestration, the
//     status with a failure's first line, a Pending instance's reason and
//     the custom status, the creation time, and the end and duration.
//     When the admin implements duroxide.InstancePager (cdb and the
//     in-memory provider do), each page is one ListInstancesPage and the
//     next page's link carries its continuation; otherwise the list pages
//     over the id listing, newest first with the Pending ones first.
//   - /instance?id=ID shows one instance: status, input, output, the error
//     of a failed one with the activity or sub-orchestration it came from
//     (linked to its event), custom status, KV store, and for a running one
//     its pending work (the events it waits for, the activities in flight
//     with their attempt and lock, the timers and when they fire, the
//     running sub-orchestrations); its executions (the newest ten;
//     &exec=N opens another), the history of one execution as a timeline
//     (event kind, the activity's or orchestration's name on completions
//     too, UTC time, time since the execution's first event, and for a
//     completion the time since the event it completes, linked on its own
//     page), paged by Options.HistoryPageSize events (&hpage=N; a pager at
//     top and bottom with first and last), filtered by event kind
//     (&kind=ActivityFailed), with runs of ten or more like events (a
//     fan-out) summed up in one line; its parent and its
//     sub-orchestrations with links.
//   - /history.json?id=ID&exec=N is one execution's history as duroxide's
//     JSON events (&download=1: an attachment).
//   - /tree?id=ID shows the whole tree the instance belongs to, from its
//     root.
//   - /queues shows per queue the messages ready, locked and delayed and
//     how long the oldest ready one has waited when the admin is a
//     duroxide.QueueStatsReporter (cdb and the in-memory provider), the
//     unlocked messages (GetQueueDepths) otherwise, and the Pending
//     instances; ?metrics=1 counts the instances (the Pending ones
//     included), executions and events (GetSystemMetrics: a read of every
//     document): it asks for confirmation first unless the request is
//     authenticated to a read-write handler, reuses a count for 5 minutes,
//     and shows what it cost on cdb.
//   - /health (a *cdb.Provider only) pings the container and shows the
//     provider's Usage (requests, request units, throttled requests, lost
//     lock races) and their rates per minute over the last hour as SVG
//     charts, from readings a goroutine takes every
//     Options.SampleInterval (Close stops it).
//
// Every page but the forms refreshes itself with &refresh=N (seconds,
// 5..3600; a meta refresh, no JavaScript); the header's links turn it on
// and off.
//
// Instance ids travel in query parameters (?id=), so an id with "/", "#",
// "?", "%", spaces or control characters is addressable; it is shown as it
// is, or quoted in Go syntax when it is empty, starts or ends with white
// space or holds a control character, a double quote or bytes that are not
// UTF-8. html/template escapes every string the pages show.
//
// # Actions
//
// A handler made with Options.ReadWrite offers, on an instance's page,
// raise an event and cancel (through Options.Client), delete (the root
// with its sub-orchestrations, ProviderAdmin.DeleteInstance) and prune
// (keep the newest N executions, ProviderAdmin.PruneExecutions). Each is a
// confirmation page (GET /action/NAME?id=ID) whose form posts to
// /action/NAME. Raise and cancel are refused on an instance that does not
// exist (404) or has completed or failed (409: nothing would ever read the
// event or the cancellation); the raise form lists and prefills the events
// the instance waits for (runtime.AwaitedExternalEvents) and asks again
// before raising another name (an event no wait is pending for is
// dropped); the delete page lists the instances and executions it
// removes. Bulk cancel and delete (GET /bulk/NAME?FILTER, posting to
// /bulk/NAME) act on the instances the list's filter matches, at most
// 1,000 per request (maxBulk; the newest first), after a confirmation
// with the count; an empty filter is refused. Cancel skips finished
// instances; delete deletes each matching root with its
// sub-orchestrations (DeleteInstance), skips matching sub-orchestrations
// and, unless forced, unfinished roots. The result counts what was done
// and lists what was skipped or failed. A post is refused with 403 Forbidden when the handler is
// read-only, when the request is not authenticated (Options.Authorize, or
// Options.BearerToken as an Authorization: Bearer header or the session
// cookie /signin sets, HttpOnly and SameSite=Strict), when it comes from
// another origin (net/http's CrossOriginProtection: Sec-Fetch-Site, then
// Origin against Host) or, for a browser's session, when its form lacks
// the handler's token (a random per-handler secret in a hidden field). A
// script's post authenticated by its bearer header alone, with no cookie,
// needs no form token (a browser never adds that header to a forged
// request):
//
//	curl -X POST -H "Authorization: Bearer $TOKEN" -d id=order-1 -d reason=stuck \
//	    http://127.0.0.1:8080/action/cancel
//
// A client that sent 10 wrong tokens within a minute is answered 429 Too
// Many Requests until the minute ends. The sign-in page's return path
// stays in the dashboard (no "//", backslash or control character). The
// pages forbid framing and <base> (CSP frame-ancestors and base-uri
// 'none'). NewHandler refuses a read-write handler without
// authentication. Reads are not authenticated: mount the handler behind
// the service's own authentication, or on loopback.
//
// # Cosmos DB requests per page view
//
// The list asks a *cdb.Provider for one page of the filtered instances
// with their metadata (duroxide.InstancePager: one cross-partition query
// with every filter in its WHERE clause, resumed from the service's
// continuation), whatever the number of instances. One view costs, in
// requests (TestCosmosRequestsPerPageView counts them):
//
//	list                     1 query request (any status, filter and order) while the matching instances fit in
//	                         one response (about 1,000); beyond that, newest or oldest first reads windows of
//	                         creation time (cdb's ListInstancesPage documents the cost), store order stays 1
//	instance                 1 point read (status and custom status) + 1 query (executions)
//	                         + 1 query per other execution shown (at most 9) + 1 query (the history page shown,
//	                         duroxide.HistoryPageReader) + 1 (its last page, for a running or failed execution
//	                         shown on another page) + 1 (the events outside the page it refers to, when any)
//	                         + 1 query (children) + 1 point read per child shown (at most 50) + 1 query (KV)
//	                         + 1 query (a running instance's queue messages); read concurrently. A page of a
//	                         2,001-event history: 8 (TestInstancePageOfALongHistoryReadsOnlyThePageShown).
//	                         Filtering by kind, and an ExternalEvent on a page of a longer history (was it
//	                         dropped?), read the whole history.
//	tree                     1 point read per level up to the root, then per instance of the tree 1 query (children)
//	                         and 1 point read (status), at most 200 instances
//	queues                   1 query (stats or depths) + 1 query (Pending ids) + 1 point read per Pending instance shown (at most 50);
//	                         a confirmed ?metrics=1: + 1 query over every instance, execution and history document
//	                         (a request per page of results), once per 5 minutes
//	history.json             as ReadHistoryWithExecutionID: the whole history
//	health                   1 (the ping)
//	actions                  each reads the instance first (1 point read); raise also its history, to list the waits;
//	                         raise, cancel: 1 write; delete and prune: as ProviderAdmin's DeleteInstance and PruneExecutions
//	bulk actions             1 ListInstancesPage per 1,000 matches (page and post); then per instance as the single action
//
// With 10,000 instances a page of 50 costs 1 request
// (BenchmarkInstanceListPageOf10000 reports requests/view; it cost about
// 152 before the paged listing). An admin without duroxide.InstancePager
// offers only the id listing: the list then asks for every id of the
// status (cdb: 1 query, a request per page of about 100 ids; 2 for every
// status, the Pending ids first) and reads the metadata of the page's
// instances (1 point read each). With a name or time filter that page
// examines ids until it has a page of matches or has examined ten pages'
// worth, then offers the next page from where it stopped.
package dashboard
