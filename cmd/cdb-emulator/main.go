// Command cdb-emulator serves the in-process Azure Cosmos DB emulator as a
// standalone server, a drop-in for the official emulator's address and key.
//
// Usage:
//
//	cdb-emulator [-addr 127.0.0.1:8081] [-http] [-key base64] [-cert-out file] [-partitions n] [-latency 5ms±2ms] [-fault spec]...
//	             [-consistency session] [-replica-lag 20ms]
//	             [-state dir | -cert file -cert-key file] [-data dir]
//
// By default it serves https://127.0.0.1:8081/ with the official emulator's
// well-known key and a freshly generated self-signed certificate, which it
// writes (PEM) to -cert-out, by default cdb-emulator-<port>.pem in the
// temporary directory.
//
// A team that keeps it running across restarts gives it -state DIR: the
// certificate is generated once and kept in DIR/cert.pem (with its key in
// DIR/key.pem), so clients that trust it keep working after a restart, and
// the data is kept in DIR/data. -cert FILE and -cert-key FILE serve a
// certificate of one's own (PEM) instead. -data DIR keeps the databases,
// containers, documents, stored procedures and offers in DIR (it overrides
// -state's DIR/data): every write is in a write-ahead log there, synced,
// before it is acknowledged, so a crash (SIGKILL, power loss) loses no
// acknowledged write; snapshots compact the log, and a restart loads the
// last one and replays the log, with every id, _rid, ETag, _ts, LSN (change
// feed continuations stay valid), TTL, unique key policy and partition key
// range. A second emulator on the same data directory is refused, with the
// pid of the one that holds it. On start it prints what a client needs: the
// endpoint, the key, the environment lines to export (COSMOS_ENDPOINT,
// COSMOS_KEY, and the variables that make Go, Node.js and Python trust the
// certificate) and the control endpoint.
//
// -consistency sets the account's default consistency level and
// -replica-lag how far the secondary replicas of each partition trail
// their primary (emulator.Options.Consistency and ReplicaLag; without
// them, $CDB_EMULATOR_CONSISTENCY and $CDB_EMULATOR_REPLICA_LAG, else
// Strong without lag). With -consistency session -replica-lag 20ms a
// read without a session token may miss the writes of the last 20 ms, as
// on a real account.
//
// -fault (repeatable) injects a fault rule from the start, in the form of
// emulator.ParseFaultRule, e.g. -fault op=Batch,kind=TooManyRequests,retry-after=100ms,probability=0.1.
// While it runs, other processes read the request counters and add or
// remove fault rules through the control endpoint under /_emulator/ (see
// package emulator's ControlPath), with "Authorization: Bearer <key>".
//
// It stops cleanly on SIGINT or SIGTERM. Without -data or -state all data
// lives in memory and is lost on exit.
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
	stateDir := fs.String("state", "", "keep the TLS certificate (generated once: DIR/cert.pem, DIR/key.pem) and, unless -data is given, the data (DIR/data) in this directory across restarts")
	certFile := fs.String("cert", "", "serve this TLS certificate (PEM; with -cert-key) instead of a generated one")
	certKeyFile := fs.String("cert-key", "", "the private key (PEM) of -cert")
	dataDir := fs.String("data", "", "keep databases, containers and documents in this directory across restarts (a crash loses at most the last second of writes)")
	consistencyText := fs.String("consistency", "", "the account's default consistency level: strong, bounded-staleness, session, consistent-prefix or eventual (default: $"+emulator.EnvConsistency+", else strong)")
	replicaLag := fs.Duration("replica-lag", 0, "how far each secondary replica may trail its primary, e.g. 20ms; Session, ConsistentPrefix and Eventual reads may see it (default: $"+emulator.EnvReplicaLag+", else none)")
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
	var consistency emulator.Consistency
	if *consistencyText != "" {
		if consistency, err = emulator.ParseConsistency(*consistencyText); err != nil {
			return fmt.Errorf("-consistency: %w", err)
		}
	}
	if *replicaLag < 0 {
		return fmt.Errorf("-replica-lag %v is negative", *replicaLag)
	}
	opts := emulator.Options{Addr: *addr, TLS: !*plain, Key: *key, PhysicalPartitions: *partitions, Latency: latency, DataDir: *dataDir,
		Consistency: consistency, ReplicaLag: *replicaLag,
		PersistErrors: func(err error) { fmt.Fprintln(os.Stderr, "cdb-emulator:", err) }}
	keptCert, err := tlsFlags(&opts, *plain, *stateDir, *certFile, *certKeyFile)
	if err != nil {
		return err
	}
	srv, err := emulator.Start(opts)
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
			cert = keptCert
		}
		if cert == "" {
			_, port, _ := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(srv.Endpoint(), "https://"), "/"))
			cert = filepath.Join(os.TempDir(), "cdb-emulator-"+port+".pem")
		}
		if cert != keptCert {
			if err := os.WriteFile(cert, srv.CertificatePEM(), 0o644); err != nil {
				return fmt.Errorf("write certificate: %w", err)
			}
		}
	}
	printClientSetup(out, srv.Endpoint(), *key, cert, opts.DataDir, len(faults))
	fmt.Fprintf(out, "consistency: %s, replica lag %v\n", srv.Consistency(), srv.ReplicaLag())
	if ready != nil {
		ready(srv)
	}
	<-ctx.Done()
	fmt.Fprintln(out, "cdb-emulator shutting down")
	return srv.Close()
}

// tlsFlags applies -state, -cert and -cert-key to opts: the certificate
// and key to serve, and -state's data directory unless -data gave one. It
// returns the file that holds the certificate served ("" when it is
// generated for this run only), generating -state's pair on its first use.
func tlsFlags(opts *emulator.Options, plain bool, stateDir, certFile, keyFile string) (string, error) {
	switch {
	case (certFile == "") != (keyFile == ""):
		return "", errors.New("-cert and -cert-key go together")
	case certFile != "" && stateDir != "":
		return "", errors.New("-cert and -state exclude each other (-state keeps its own certificate)")
	case plain && certFile != "":
		return "", errors.New("-cert serves HTTPS; it cannot go with -http")
	}
	if stateDir != "" {
		if opts.DataDir == "" {
			opts.DataDir = filepath.Join(stateDir, "data")
		}
		if plain {
			return "", nil
		}
		if err := os.MkdirAll(stateDir, 0o755); err != nil {
			return "", fmt.Errorf("-state: %w", err)
		}
		certFile, keyFile = filepath.Join(stateDir, "cert.pem"), filepath.Join(stateDir, "key.pem")
		if _, err := os.Stat(certFile); errors.Is(err, os.ErrNotExist) {
			certPEM, keyPEM, err := emulator.GenerateCertificate()
			if err != nil {
				return "", err
			}
			// The key first: a cert.pem is only ever next to its key.
			if err := writeFileAtomic(keyFile, keyPEM, 0o600); err != nil {
				return "", fmt.Errorf("-state: %w", err)
			}
			if err := writeFileAtomic(certFile, certPEM, 0o644); err != nil {
				return "", fmt.Errorf("-state: %w", err)
			}
		}
	}
	if certFile == "" {
		return "", nil
	}
	var err error
	if opts.TLSCertPEM, err = os.ReadFile(certFile); err != nil {
		return "", fmt.Errorf("certificate: %w", err)
	}
	if opts.TLSKeyPEM, err = os.ReadFile(keyFile); err != nil {
		return "", fmt.Errorf("certificate key: %w", err)
	}
	return certFile, nil
}

// writeFileAtomic writes data to a temporary file next to name and renames
// it into place, so name is never seen half written.
func writeFileAtomic(name string, data []byte, perm os.FileMode) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// printClientSetup prints what a client needs to use the emulator: the
// endpoint and key as environment lines to export, the variables that make
// Go, Node.js and Python trust cert (none with plain HTTP), and the control
// endpoint. dataDir is where the data is kept ("" in memory only).
func printClientSetup(out io.Writer, endpoint, key, cert, dataDir string, faults int) {
	if dataDir == "" {
		fmt.Fprintf(out, "cdb-emulator serving %s (in memory; Ctrl-C stops it)\n", endpoint)
	} else {
		fmt.Fprintf(out, "cdb-emulator serving %s (data kept in %s; Ctrl-C stops it)\n", endpoint, dataDir)
	}
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
