// Command cdb-admin inspects and manages the orchestrations stored in a
// Cosmos DB container through the provider's ProviderAdmin API (duroxide's
// providers::ProviderAdmin trait, microsoft/duroxide src/providers/mod.rs).
//
// Usage:
//
//	cdb-admin [flags] <command> [command flags] [arguments]
//
// Commands:
//
//	list     [-status Running|Completed|Failed|ContinuedAsNew|Pending] [-limit N]
//	         instances (Pending ones, whose start has not run, first),
//	         newest first, with name, status and times (ids and names
//	         longer than 40 characters cut with "…" unless -v)
//	show     <instance>
//	         status, output, custom status, parent and every execution;
//	         for a Pending instance, why its start has not run
//	history  <instance> [-execution N]
//	         one execution's history as a table (default: the current one)
//	tree     <instance>
//	         the instance and its sub-orchestrations, with their statuses
//	queues   unlocked messages per queue, and the Pending instances
//	metrics  instance, execution and event counts over the container
//	delete   <instance>... [-force] [-yes]
//	delete   -completed-before T [-limit N] [-yes]
//	         delete root instances with their sub-orchestrations and all
//	         their data (a Pending instance: its queued start and every
//	         message for it); asks for confirmation unless -yes; -force
//	         also deletes Running instances
//	prune    <instance>... | -all  [-keep-last N] [-completed-before T] [-yes]
//	         delete old executions (never the current one)
//	export   [-o DIR] <instance>... | [-o DIR] [-status S] [-prefix P]
//	         write the histories of the instances named, or of every
//	         instance (with -status, -prefix: those that match), to DIR
//	         (default: the current directory), one JSON file per instance
//	serve    [-addr 127.0.0.1:8088] [-prefix /path] [-rw]
//	         serve the web dashboard (package dashboard) for the container
//	         until interrupted; read-only unless -rw, whose actions (raise
//	         an event, cancel, delete, prune) need the token in
//	         $DASHBOARD_TOKEN; -timeout bounds only the connection
//
// export's file for an instance is one JSON document with every execution
// still stored, in ascending order, each event in duroxide's serde JSON
// (what history -json prints):
//
//	{"instance_id": "orders/42",
//	 "executions": [
//	   {"execution_id": 1, "events": [<event>, ...]},
//	   {"execution_id": 2, "events": [...]}]}
//
// Its name is the id with every byte other than an ASCII letter, a digit,
// '-', '_' (and '.' after the first byte) written as %XX, then ".json"
// (orders/42: orders%2F42.json); cdb-admin export -h gives the details
// (Windows device names, long ids, ids that differ only in letter case).
//
// Flags, accepted before or after the command:
//
//	-endpoint URL     account endpoint (default $COSMOS_ENDPOINT)
//	-key KEY          account key (default $COSMOS_KEY)
//	-database NAME    database (default $COSMOS_DATABASE, else "duroxide")
//	-container NAME   container (default $COSMOS_CONTAINER, else "duroxide")
//	-json             print JSON for scripts instead of tables
//	-timeout D        give up after D (default 1m)
//	-ca-cert FILE     trust this PEM certificate (cdb-emulator -cert-out)
//	-insecure         skip TLS verification (local emulators only)
//	-v                report the Cosmos DB requests and request units the
//	                  command cost, on stderr; print long ids whole in
//	                  list's table
//
// Tables and messages print an instance id or a name as it is, or quoted
// in Go syntax ("trailing ", "tab\there") when it is empty, begins or ends
// with white space, or holds a control character, a double quote, a rune
// that is not printable or bytes that are not UTF-8; -json prints ids as
// they are. history prints each event's identifying fields (name, version,
// instance, key) first and cuts longer values (inputs, results) at 40
// characters with "…".
//
// A time T is RFC 3339 ("2026-01-31T00:00:00Z") or a Go duration meaning
// that long ago ("720h"). cdb-admin never creates a database or container:
// a missing one is reported as a connection error.
//
// Exit statuses:
//
//	0  success
//	1  the operation failed (Cosmos DB or the provider refused or errored)
//	2  usage: unknown command, malformed flag or argument
//	3  not found: unknown instance or execution
//	4  cannot connect: no endpoint or key, endpoint unreachable, key refused,
//	   database or container missing
//	5  aborted at the confirmation prompt; nothing was deleted
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit statuses (the package documentation lists them for users).
const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitNotFound = 3
	exitConnect  = 4
	exitAborted  = 5
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// cmdIO is the command's environment: its variables, input and outputs.
type cmdIO struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}
