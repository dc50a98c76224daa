// Package emulator is an in-process Azure Cosmos DB (NoSQL API) emulator that
// speaks the gateway REST protocol the azcosmos SDK uses.
//
// It is held to one rule: a test that passes against it passes against the
// real service. Where Cosmos DB refuses a request (a cross-partition ORDER BY
// through the gateway, a batch of 101 operations, a 2.1 MB document, an id
// containing '/'), the emulator refuses it the same way, with the same status
// code. It also counts requests per operation kind and can inject faults,
// in process or, for other processes, through its control endpoint
// (ControlPath). The emulator's README (emulator/README.md in the
// repository) says what is served, refused and not emulated.
//
// It depends on the standard library only, JSON included: its own parser
// and value tree keep what Cosmos DB's queries need and encoding/json
// drops (member order, number literals, undefined) and keep stored
// documents as raw text until a query looks inside. It is not shared with
// package duroxide's serde-exact codec, which answers another question;
// encoding/json/v2's jsontext would replace both once it leaves the
// GOEXPERIMENT.
//
// Typical use in a test:
//
//	srv, err := emulator.Start(emulator.Options{})
//	if err != nil { t.Fatal(err) }
//	defer srv.Close()
//	cred, _ := azcosmos.NewKeyCredential(srv.Key())
//	client, _ := azcosmos.NewClientWithKey(srv.Endpoint(), cred,
//		&azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: srv.HTTPClient()}})
package emulator

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// WellKnownKey is the master key of the official Cosmos DB emulator; the
// emulator uses it unless Options.Key says otherwise.
const WellKnownKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// MaxPhysicalPartitions is the most physical partitions Options can start
// a container with (cdb-emulator's -partitions takes the same range).
const MaxPhysicalPartitions = 64

// Options configure Start. The zero value serves plain HTTP on a random
// loopback port with WellKnownKey.
type Options struct {
	// Addr is the TCP listen address; default "127.0.0.1:0" (a random
	// loopback port).
	Addr string
	// TLS serves HTTPS with a self-signed certificate generated at start,
	// valid for 127.0.0.1, ::1 and localhost. HTTPClient trusts it.
	TLS bool
	// Key is the base64 master key clients must sign requests with;
	// default WellKnownKey.
	Key string
	// PhysicalPartitions is the number of physical partitions (partition
	// key ranges, the SDKs' feed ranges) each new container starts with,
	// splitting the effective partition key space evenly: 1 to
	// MaxPhysicalPartitions, 0 for the default 1 (Start refuses anything
	// else). Server.SplitPartitionKeyRange adds more at run time.
	PhysicalPartitions int
	// Latency is added to every request (see Latency); zero adds none.
	Latency Latency
	// LatencyByOp overrides Latency for the listed operation kinds, e.g.
	// a slower OpQuery; kinds not listed take Latency.
	LatencyByOp map[OpKind]Latency
	// LatencySeed seeds the jitter's generator, so runs repeat; default 0.
	LatencySeed int64
	// TLSCertPEM and TLSKeyPEM, set together with TLS, are the certificate
	// chain and private key (PEM) to serve instead of a certificate
	// generated at start, so that clients that trust it keep working across
	// restarts (GenerateCertificate makes a pair). Start fails when they do
	// not form a valid key pair.
	TLSCertPEM, TLSKeyPEM []byte
	// DataDir, when set, keeps the databases, containers, documents,
	// scripts and offers in this directory across restarts, and nothing
	// the server acknowledged is lost, however the process ends (Close,
	// SIGKILL, a power cut): every change is appended to a write-ahead
	// log there and the request answered only once the log is synced
	// (one fsync covers every write that arrived meanwhile); snapshots
	// compact the log. Start creates the directory if
	// needed, takes its lock (ErrDataDirInUse when another server, in any
	// process, holds it), loads the snapshot and replays the log (and
	// fails on a snapshot or log it cannot read whole; a torn last
	// record, never acknowledged, is dropped). Close writes a last
	// snapshot and releases the lock.
	DataDir string
	// PersistErrors, when set with DataDir, is called (from a background
	// goroutine) with each error of writing the data directory: a
	// compaction that failed (retried a second later; the log keeps
	// everything meanwhile), or the log itself, after which every write
	// is answered 503 until a restart. Close returns the last error in
	// any case.
	PersistErrors func(error)

	// Consistency is the account's default consistency level, which the
	// account document reports (userConsistencyPolicy
	// .defaultConsistencyLevel) and reads follow (see Consistency). Empty
	// means the level EnvConsistency names, and without it
	// ConsistencySession when a replica lag is set (ReplicaLag or
	// EnvReplicaLag), else ConsistencyStrong (a real account defaults to
	// Session). Start fails on an unknown level.
	Consistency Consistency
	// ReplicaLag is how far a secondary replica of a physical partition
	// may trail its primary: each of the three secondaries of a partition
	// trails by a fixed lag in (0, ReplicaLag]. Reads at Session,
	// ConsistentPrefix or Eventual consistency are served by one replica
	// at random (the primary or a secondary that has applied the
	// request's session token). Zero means the duration EnvReplicaLag
	// gives, and without it none: every replica is up to date. Start
	// fails on a negative lag or an EnvReplicaLag that is not a Go
	// duration.
	ReplicaLag time.Duration

	// Regions, a test option, presents a multi-region account: the
	// region names, the write region first. The account document lists
	// them all in readableLocations (and in writableLocations with
	// MultipleWriteLocations, else only the first); the first region is
	// served at Endpoint, each other one on its own port of the same host
	// (RegionEndpoint), so that a client's preferred read regions route
	// its reads there. Empty means one region, "South Central US". Start
	// fails on an empty or repeated name.
	Regions []string
	// RegionLag is how far a read region (every region but the first)
	// trails the write region: a Session, ConsistentPrefix or Eventual
	// read sent there sees the writes committed at least RegionLag ago
	// (its secondaries ReplicaLag more), so a session token from a write
	// is often ahead of it and answered 404/1002, which the SDKs retry in
	// the write region. Strong and BoundedStaleness reads see the write
	// region's primary. A write sent to a read region is refused with 403
	// substatus 3 (WriteForbidden), unless MultipleWriteLocations.
	RegionLag time.Duration
	// MultipleWriteLocations reports the account as accepting writes in
	// every region (enableMultipleWriteLocations, every region in
	// writableLocations). Only the report: the emulator still decides
	// every write in one store, so none of the conflicts of such an
	// account happen; it exists so that a client's refusal of such
	// accounts can be tested.
	MultipleWriteLocations bool

	// compactBytes replaces the smallest log that triggers a compaction
	// (defaultCompactBytes); set only by this package's tests.
	compactBytes int64
	// clock replaces time.Now; set only by this package's tests.
	clock func() time.Time
}

// Server is a running emulator. All methods are safe for concurrent use.
type Server struct {
	key     string
	keyRaw  []byte
	tls     bool
	ln      net.Listener
	http    *http.Server
	client  *http.Client
	certPEM []byte
	done    chan struct{}
	// stopJanitor ends the background TTL deletion; janitorDone closes
	// when it has ended.
	stopJanitor chan struct{}
	janitorDone chan struct{}

	closeOnce sync.Once
	closeErr  error

	// dur keeps the state in Options.DataDir (persist.go, wal.go); nil
	// without one. testHookCompact, set only by this package's tests, is
	// called at the steps of a compaction.
	dur             *durability
	testHookCompact func(step string)

	mu      sync.RWMutex
	dbs     map[string]*database
	offers  map[string]*offer // throughput resources by id
	nextRID uint32

	etagSeq atomic.Uint64

	counters counterSet
	faults   faultSet
	control  controlRules // the fault rules added through the control endpoint
	queries  queryCache
	macs     macPool
	dates    dateCache

	// now returns the current time; replaced only by tests of this package.
	now func() time.Time
	// partitions is the number of physical partitions of new containers.
	partitions int
	// latency draws the simulated latency of each request; nil adds none.
	latency *latencySim
	// consistency is the account's default level; replicas the lag of
	// the secondary replicas (replicas.go).
	consistency Consistency
	replicas    replicaSet
	// regions are the account's regions (regions.go).
	regions regionSet
}

// Start listens on opts.Addr and serves the emulator in the background. It
// returns once the listener is open, typically within a few milliseconds.
// It fails if the key is not valid base64, the address cannot be listened on,
// or the TLS certificate cannot be generated.
func Start(opts Options) (*Server, error) {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Key == "" {
		opts.Key = WellKnownKey
	}
	keyRaw, err := base64.StdEncoding.DecodeString(opts.Key)
	if err != nil {
		return nil, fmt.Errorf("emulator: key is not valid base64: %w", err)
	}
	if opts.PhysicalPartitions < 0 || opts.PhysicalPartitions > MaxPhysicalPartitions {
		return nil, fmt.Errorf("emulator: PhysicalPartitions %d is outside 1..%d (0 for the default 1)", opts.PhysicalPartitions, MaxPhysicalPartitions)
	}
	if (opts.TLSCertPEM == nil) != (opts.TLSKeyPEM == nil) {
		return nil, errors.New("emulator: TLSCertPEM and TLSKeyPEM go together")
	}
	if err := consistencyFromEnv(&opts); err != nil {
		return nil, err
	}
	if err := checkRegions(opts.Regions, opts.RegionLag); err != nil {
		return nil, err
	}
	s := &Server{
		key:         opts.Key,
		keyRaw:      keyRaw,
		macs:        macPool{key: keyRaw},
		tls:         opts.TLS,
		dbs:         make(map[string]*database),
		done:        make(chan struct{}),
		now:         time.Now,
		stopJanitor: make(chan struct{}),
		janitorDone: make(chan struct{}),
		partitions:  max(1, opts.PhysicalPartitions),
		latency:     newLatencySim(opts.Latency, opts.LatencyByOp, opts.LatencySeed),
	}
	if opts.clock != nil {
		s.now = opts.clock
	}

	s.consistency = opts.Consistency
	s.replicas = replicaSet{lag: opts.ReplicaLag, regionLag: opts.RegionLag, seed: rand.Uint64(), start: s.now()}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("emulator: listen %s: %w", opts.Addr, err)
	}
	if opts.DataDir != "" {
		if err := s.openDataDir(opts.DataDir, opts.PersistErrors, opts.compactBytes); err != nil {
			_ = ln.Close()
			return nil, err
		}
	}
	transport := &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}
	s.http = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 30 * time.Second,
		// Keep HTTP/1.1 so that faults can hijack and drop connections.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ErrorLog:     discardLogger(),
	}
	var serverTLS *tls.Config
	if opts.TLS {
		cert, certPEM, err := serverCert(opts.TLSCertPEM, opts.TLSKeyPEM)
		if err != nil {
			_ = ln.Close()
			if s.dur != nil {
				_ = s.closeDataDir()
			}
			return nil, err
		}
		s.certPEM = certPEM
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(certPEM)
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		serverTLS = &tls.Config{
			Certificates: []tls.Certificate{cert},
			NextProtos:   []string{"http/1.1"},
			MinVersion:   tls.VersionTLS12,
		}
	}
	s.regions, err = listenRegions(ln, opts.Regions, opts.MultipleWriteLocations)
	if err != nil {
		if s.dur != nil {
			_ = s.closeDataDir()
		}
		return nil, err
	}
	listeners := []net.Listener{ln}
	for _, r := range s.regions.list[1:] {
		listeners = append(listeners, r.ln)
	}
	if serverTLS != nil {
		for i, l := range listeners {
			listeners[i] = tls.NewListener(l, serverTLS)
		}
	}
	s.ln = listeners[0]
	s.client = &http.Client{Transport: transport}
	var serving sync.WaitGroup
	for _, l := range listeners {
		serving.Add(1)
		go func() {
			defer serving.Done()
			_ = s.http.Serve(l)
		}()
	}
	go func() {
		serving.Wait()
		close(s.done)
	}()
	go s.janitor(s.stopJanitor, s.janitorDone)
	return s, nil
}

// Endpoint returns the account endpoint to hand to azcosmos, with a trailing
// slash, e.g. "http://127.0.0.1:34567/" (or "https://..." with TLS). An
// unspecified listen host (0.0.0.0, ::) is reported as 127.0.0.1.
func (s *Server) Endpoint() string {
	addr := s.ln.Addr().(*net.TCPAddr)
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	scheme := "http"
	if s.tls {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s/", scheme, net.JoinHostPort(host, fmt.Sprint(addr.Port)))
}

// Key returns the base64 master key clients must sign requests with.
func (s *Server) Key() string { return s.key }

// HTTPClient returns an HTTP client for this server. With TLS it trusts the
// server's self-signed certificate. Pass it as the azcore transport:
// azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: srv.HTTPClient()}}.
func (s *Server) HTTPClient() *http.Client { return s.client }

// CertificatePEM returns the PEM-encoded self-signed certificate the server
// presents, or nil when it serves plain HTTP.
func (s *Server) CertificatePEM() []byte {
	if s.certPEM == nil {
		return nil
	}
	return append([]byte(nil), s.certPEM...)
}

// Close stops the server at once, dropping open connections. Without
// Options.DataDir it discards all data; with one it writes a last snapshot
// there, releases the directory's lock and returns the first error of
// either, if any (every acknowledged write is in the log even then). It is
// idempotent; later calls return the first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		err := s.http.Close()
		<-s.done
		close(s.stopJanitor)
		<-s.janitorDone
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.closeErr = err
		}
		if s.dur != nil {
			if err := s.closeDataDir(); err != nil && s.closeErr == nil {
				s.closeErr = err
			}
		}
		s.client.CloseIdleConnections()
	})
	return s.closeErr
}

// Reset deletes every database (and so every container and document),
// leaving counters and fault rules as they are. Resource ids are never
// reused, so ETags and continuation tokens from before a reset stay invalid.
// With Options.DataDir it returns once the deletion is durable.
func (s *Server) Reset() {
	s.mu.Lock()
	s.dbs = make(map[string]*database)
	s.offers = nil
	s.logReset()
	s.mu.Unlock()
	_ = s.awaitDurable() // a failed log answers every later write 503
}

// nextResourceNumber hands out database and container numbers for rids.
// The caller holds s.mu for writing.
func (s *Server) nextResourceNumber() uint32 {
	s.nextRID++
	return s.nextRID
}

// newETag returns a fresh ETag counter value, unique across the server.
func (s *Server) newETag() uint64 { return s.etagSeq.Add(1) }

// unixNow is the current time in seconds, for _ts.
func (s *Server) unixNow() int64 { return s.now().Unix() }
