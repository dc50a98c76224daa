// Command cdb-emulator serves the in-process Azure Cosmos DB emulator as a
// standalone server, a drop-in for the official emulator's address and key.
//
// Usage:
//
//	cdb-emulator [-addr 127.0.0.1:8081] [-http] [-key base64] [-cert-out file] [-partitions n] [-latency 5ms±2ms] [-fault spec]...
//
// By default it serves https://127.0.0.1:8081/ with the official emulator's
// well-known key and a freshly generated self-signed certificate, which it
// writes (PEM) to -cert-out, by default cdb-emulator-<port>.pem in the
// temporary directory. On start it prints what a client needs: the
// endpoint, the key, the environment lines to export (COSMOS_ENDPOINT,
// COSMOS_KEY, and the variables that make Go, Node.js and Python trust the
// certificate) and the control endpoint.
//
// -fault (repeatable) injects a fault rule from the start, in the form of
// emulator.ParseFaultRule, e.g. -fault op=Batch,kind=TooManyRequests,retry-after=100ms,probability=0.1.
// While it runs, other processes read the request counters and add or
// remove fault rules through the control endpoint under /_emulator/ (see
// package emulator's ControlPath), with "Authorization: Bearer <key>".
//
// It stops cleanly on SIGINT or SIGTERM. All data lives in memory and is
// lost on exit.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
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
	partitions := fs.Int("partitions", 1, "physical partitions (partition key ranges) of each new container, 1 to 64 (emulator.MaxPhysicalPartitions)")
	var faults []emulator.FaultRule
	fs.Func("fault", "inject a fault rule, e.g. op=Batch,kind=TooManyRequests,retry-after=100ms,probability=0.1 (repeatable; keys: kind, op, pk, id, times, probability, seed, retry-after, delay)", func(spec string) error {
		r, err := emulator.ParseFaultRule(spec)
		if err == nil {
			faults = append(faults, r)
		}
		return err
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *partitions < 1 || *partitions > emulator.MaxPhysicalPartitions {
		return fmt.Errorf("-partitions %d is outside 1..%d", *partitions, emulator.MaxPhysicalPartitions)
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
	for _, f := range faults {
		srv.InjectFault(f)
	}
	cert := ""
	if !*plain {
		cert = *certOut
		if cert == "" {
			_, port, _ := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(srv.Endpoint(), "https://"), "/"))
			cert = filepath.Join(os.TempDir(), "cdb-emulator-"+port+".pem")
		}
		if err := os.WriteFile(cert, srv.CertificatePEM(), 0o644); err != nil {
			return fmt.Errorf("write certificate: %w", err)
		}
	}
	printClientSetup(out, srv.Endpoint(), *key, cert, len(faults))
	if ready != nil {
		ready(srv)
	}
	<-ctx.Done()
	fmt.Fprintln(out, "cdb-emulator shutting down")
	return srv.Close()
}

// printClientSetup prints what a client needs to use the emulator: the
// endpoint and key as environment lines to export, the variables that make
// Go, Node.js and Python trust cert (none with plain HTTP), and the control
// endpoint.
func printClientSetup(out io.Writer, endpoint, key, cert string, faults int) {
	fmt.Fprintf(out, "cdb-emulator serving %s (in memory; Ctrl-C stops it)\n", endpoint)
	if key == emulator.WellKnownKey {
		fmt.Fprintln(out, "key: the official emulator's well-known key")
	}
	fmt.Fprintln(out, "\nFor clients, export:")
	fmt.Fprintf(out, "  export COSMOS_ENDPOINT=%s\n", endpoint)
	fmt.Fprintf(out, "  export COSMOS_KEY='%s'\n", key)
	if cert != "" {
		fmt.Fprintf(out, "  export SSL_CERT_FILE=%s        # Go: trust the emulator's certificate (replaces the system roots for that process)\n", cert)
		fmt.Fprintf(out, "  export NODE_EXTRA_CA_CERTS=%s  # Node.js (@azure/cosmos)\n", cert)
		fmt.Fprintf(out, "  export REQUESTS_CA_BUNDLE=%s   # Python (azure-cosmos)\n", cert)
		fmt.Fprintf(out, "Java: keytool -importcert -file %s -keystore emulator.jks; .NET: trust it as for the official emulator.\n", cert)
	}
	fmt.Fprintf(out, "\nControl endpoint (Authorization: Bearer $COSMOS_KEY): GET/DELETE %s_emulator/counters, GET/POST/DELETE %s_emulator/faults\n", endpoint, endpoint)
	if faults > 0 {
		fmt.Fprintf(out, "%d fault rule(s) injected from -fault\n", faults)
	}
}
