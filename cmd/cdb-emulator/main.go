// Command cdb-emulator serves the in-process Azure Cosmos DB emulator as a
// standalone server, a drop-in for the official emulator's address and key.
//
// Usage:
//
//	cdb-emulator [-addr 127.0.0.1:8081] [-http] [-key base64] [-cert-out file] [-partitions n] [-latency 5ms±2ms]
//
// By default it serves https://127.0.0.1:8081/ with the official emulator's
// well-known key and a freshly generated self-signed certificate; -cert-out
// writes that certificate (PEM) so clients can trust it. It stops cleanly on
// SIGINT or SIGTERM. All data lives in memory and is lost on exit.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/duroxide-go/duroxide-cdb/emulator"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, nil); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "cdb-emulator:", err)
		os.Exit(1)
	}
}

// run parses args, starts the emulator, reports its endpoint on out, calls
// ready (if non-nil) with the running server, and serves until ctx ends.
func run(ctx context.Context, args []string, out io.Writer, ready func(*emulator.Server)) error {
	fs := flag.NewFlagSet("cdb-emulator", flag.ContinueOnError)
	fs.SetOutput(out)
	addr := fs.String("addr", "127.0.0.1:8081", "listen address")
	plain := fs.Bool("http", false, "serve plain HTTP instead of HTTPS")
	key := fs.String("key", emulator.WellKnownKey, "master key (base64)")
	certOut := fs.String("cert-out", "", "write the self-signed TLS certificate (PEM) to this file")
	latencyText := fs.String("latency", "", "simulated per-request latency, e.g. 5ms or 5ms±2ms (also 5ms+-2ms): half before the request is applied, half before the answer")
	partitions := fs.Int("partitions", 1, "physical partitions (partition key ranges) of each new container, 1 to 64")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *partitions < 1 || *partitions > 64 {
		return fmt.Errorf("-partitions %d is outside 1..64", *partitions)
	}
	latency, err := emulator.ParseLatency(*latencyText)
	if err != nil {
		return fmt.Errorf("-latency: %w", err)
	}
	srv, err := emulator.Start(emulator.Options{Addr: *addr, TLS: !*plain, Key: *key, PhysicalPartitions: *partitions, Latency: latency})
	if err != nil {
		return err
	}
	defer srv.Close()
	if *certOut != "" && !*plain {
		if err := os.WriteFile(*certOut, srv.CertificatePEM(), 0o644); err != nil {
			return fmt.Errorf("write certificate: %w", err)
		}
	}
	fmt.Fprintf(out, "cdb-emulator serving %s\n", srv.Endpoint())
	if *key == emulator.WellKnownKey {
		fmt.Fprintln(out, "key: the official emulator's well-known key")
	}
	if ready != nil {
		ready(srv)
	}
	<-ctx.Done()
	fmt.Fprintln(out, "cdb-emulator shutting down")
	return srv.Close()
}
