// Config: every setting of the provider, its defaults, and ConfigFromEnv.

package cdb

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/duroxide-go/duroxide-cdb/internal/changefeed"
	"github.com/duroxide-go/duroxide-cdb/internal/leases"
	"github.com/duroxide-go/duroxide-cdb/internal/slogzap"
)

// Defaults applied by New to the zero fields of a Config
// (DESIGN.md §9).
const (
	// DefaultDatabase is the database New uses when Config.Database is empty.
	DefaultDatabase = "duroxide"
	// DefaultContainer is the container New uses when Config.Container is empty.
	DefaultContainer = "duroxide"
	// DefaultConnectTimeout is how long New tries to reach the account at
	// most when Config.ConnectTimeout is zero.
	DefaultConnectTimeout = 40 * time.Second
	// DefaultRetryBudget bounds the retries of a request whose context has
	// no deadline when Config.RetryBudget is zero.
	DefaultRetryBudget = 10 * time.Second
	// DefaultReconcilerInterval is how often the outbox reconciler polls.
	DefaultReconcilerInterval = 2 * time.Second
	// DefaultReconcilerAgeThreshold is how old a pending outbox intent must
	// be before the reconciler delivers it (younger ones are still being
	// delivered by the ack that wrote them).
	DefaultReconcilerAgeThreshold = 2 * time.Second
)

// Environment variables ConfigFromEnv reads.
const (
	EnvEndpoint  = "COSMOS_ENDPOINT"
	EnvKey       = "COSMOS_KEY"
	EnvDatabase  = "COSMOS_DATABASE"
	EnvContainer = "COSMOS_CONTAINER"
)

// Config configures a Provider. The zero value is not usable on its own (it
// names no account), but every other field has a documented default, so a
// Config needs only an account: Endpoint and Key, Endpoint and Credential,
// or a ready Client.
type Config struct {
	// Endpoint is the account endpoint, e.g.
	// "https://myaccount.documents.azure.com:443/". Required unless Client
	// is set.
	Endpoint string
	// Key is the account's primary or secondary key (master key
	// authentication). Exactly one of Key and Credential is required unless
	// Client is set.
	Key string
	// Credential authenticates with Microsoft Entra ID instead of a key
	// (for example azidentity.NewDefaultAzureCredential); the identity needs
	// the Cosmos DB data-plane roles, and creating the database and
	// container additionally needs control-plane rights, or the two must
	// exist already.
	Credential azcore.TokenCredential
	// Client is a ready azcosmos client; when set, Endpoint, Key,
	// Credential and ClientOptions are ignored and Close does not close it.
	// Give it PartitionKeyHeaderPolicy in its PerCallPolicies, or instance
	// ids with characters outside Unicode's Basic Multilingual Plane (an
	// emoji) will be refused by the service, and a SessionTokenPolicy of
	// its own, or on an account with Session consistency (the default) the
	// process may not read its own writes (a start read back as missing, a
	// turn fetched without its last history). New does not see such a
	// client's account document, so it does not check the account's write
	// regions (ErrMultiRegionWrites): make sure it has one. Retries: as
	// for ClientOptions, MaxRetries -1 is best. Its requests keep
	// azcosmos's own retries of a request that got no answer (four more
	// tries a second apart: 4 s per request against a stopped store, where
	// the clients New builds fail at once and the provider retries), and
	// the store health sees each call's outcome rather than each try's.
	Client *azcosmos.Client
	// ClientOptions are passed to the azcosmos client New builds (a custom
	// transport, for instance). New disables the SDK's generic retries
	// (Retry.MaxRetries = -1) unless they are set explicitly: the provider
	// retries itself, knowing which writes are safe to repeat. New also
	// appends PartitionKeyHeaderPolicy and a SessionTokenPolicy to
	// PerCallPolicies. PreferredRegions (reads from the nearest regions of
	// a multi-region account) are supported: the session tokens make a
	// process read its own writes there too (a region that has not caught
	// up answers 404/1002, which is retried); an account that takes writes
	// in several regions is refused (ErrMultiRegionWrites).
	ClientOptions *azcosmos.ClientOptions
	// HTTPClient, when set, sends the requests of the azcosmos client New
	// builds (azcore's ClientOptions.Transport, without importing azcore):
	// an *http.Client with a proxy or a custom TLS configuration, or the
	// embedded emulator's (emulator.Server.HTTPClient, which trusts the
	// emulator's certificate). nil (the default): the SDK's own. Ignored
	// with Client; New refuses a Config that also sets
	// ClientOptions.Transport. README, "Run your service locally", is the
	// recipe for a service on the embedded emulator.
	HTTPClient HTTPDoer

	// Database is the database name; default DefaultDatabase.
	Database string
	// Container is the container name; default DefaultContainer.
	Container string

	// OrchestrationLanes is the number of lanes the default orchestration
	// LeaseProvider splits the 256 dispatch slots into, 1 to 256; default 1
	// (every fetch sees every slot, and any number of dispatchers share
	// it). It is not a concurrency: how many dispatchers fetch at once is
	// the runtime's choice, with its one documented default
	// (runtime.Options.OrchestrationConcurrency, 2). A runtime reads the
	// lanes (Provider.DispatchConcurrency) and runs at least as many
	// dispatchers, one per lane, refusing fewer, whose fetches would wait
	// for each other's lanes. Set it to the runtime's concurrency to give
	// each dispatcher a lane of its own (fewer races between a process's
	// own fetches).
	OrchestrationLanes int
	// WorkerLanes is the same for the worker queue's dispatch slots and the
	// runtime's WorkerConcurrency; default 1.
	WorkerLanes int
	// OrchestrationConcurrency is the old name of OrchestrationLanes, used
	// when OrchestrationLanes is 0; after defaults both hold the lanes.
	//
	// Deprecated: use OrchestrationLanes (the provider has lanes; the
	// runtime has the concurrency).
	OrchestrationConcurrency int
	// WorkerConcurrency is the old name of WorkerLanes, used when
	// WorkerLanes is 0; after defaults both hold the lanes.
	//
	// Deprecated: use WorkerLanes.
	WorkerConcurrency int
	// OrchestrationLeases and WorkerLeases replace the default
	// InMemoryLeaseProviders built from the concurrencies above.
	OrchestrationLeases LeaseProvider
	WorkerLeases        LeaseProvider
	// Leases says where the dispatch-slot leases live when
	// OrchestrationLeases and WorkerLeases are not set. LeasesInContainer
	// (the default): lease documents in the container's LeasePartitionKey
	// partition; each process that fetches from a queue owns a fair share
	// of its 256 slots and queries only those, so replicas do not race for
	// the same messages; a process claims a queue's share at its first
	// fetch of it and gives it up when it stops fetching or closes; the
	// slots of a process that died are queried by the others after two
	// missed heartbeats and taken after LeaseExpiry. LeasesInProcess:
	// every process queries every slot (one process alone pays no lease
	// requests; several race for each message). README, "Several
	// replicas", says why the default. Any other value is an error.
	Leases LeaseMode
	// LeaseHeartbeatInterval is how often a Provider with
	// LeasesInContainer renews its owner document and rebalances its
	// share while it fetches (two requests, more when slots move; none
	// while it fetches from neither queue); an owner whose document stays
	// unchanged at two of another's heartbeats is suspect, and its slots
	// are queried by the others. Default DefaultLeaseHeartbeatInterval.
	LeaseHeartbeatInterval time.Duration
	// LeaseExpiry is how long another owner's document must stay unchanged
	// before this Provider takes that owner's slots; at least twice
	// LeaseHeartbeatInterval; default DefaultLeaseExpiry.
	LeaseExpiry time.Duration

	// ProcessID names this process among those sharing the container's
	// lease slots (LeasesInContainer): a process restarted with the same
	// ProcessID after a crash takes its dead predecessor's slots at its
	// first fetch, instead of waiting for their lease to expire
	// (LeaseExpiry) or to be suspected (two heartbeats). Default: the host
	// name and the program's name ("web-7f9c-orders"), which a restarted
	// container or service keeps. Two live processes with the same
	// ProcessID are told apart (by the pid recorded on this host, or by
	// the owner document they both renew): the second uses a random id
	// and warns, so set distinct ProcessIDs for replicas of one program on
	// one host (an ordinal, a pod name). Characters Cosmos DB refuses in
	// ids (/ \ ? #) are replaced; at most 100 characters are kept (with a
	// hash of the rest).
	ProcessID string

	// ReconcilerInterval is how often the outbox reconciler looks for
	// undelivered intents; default DefaultReconcilerInterval.
	ReconcilerInterval time.Duration
	// ReconcilerAgeThreshold is the minimum age of an intent the
	// reconciler delivers; default DefaultReconcilerAgeThreshold.
	ReconcilerAgeThreshold time.Duration
	// DisableReconciler starts no reconciler goroutine (for tests that
	// drive delivery themselves, or a deployment where another process
	// reconciles).
	DisableReconciler bool

	// LongPollInterval is how often a fetch called with a poll timeout
	// queries again while it waits for work, and how long the answer of a
	// candidate query is trusted by the fetches of this process:
	// the bound on how late they see messages other processes wrote;
	// default DefaultLongPollInterval. Each poll is one query request.
	// While the change-feed reader (DisableChangeFeedWakeups) is healthy,
	// an answer is trusted for 10 s instead (the reader hints the messages
	// written since) and waiting fetches query that often.
	LongPollInterval time.Duration

	// HeldHistoryEvents bounds the history this process keeps decoded
	// between the turns of the instances it runs, in events over all
	// instances (least recently used out first): a turn of an instance it
	// holds reads and decodes only the events after the held ones, instead
	// of the whole history, while the instance document still names the
	// same execution. Default DefaultHeldHistoryEvents (200,000: about
	// 100 MB at 500 bytes per decoded event); negative holds nothing.
	HeldHistoryEvents int

	// HeldInstanceStates bounds how many instances this process holds the
	// state of, as it last wrote them (least recently used out first): the
	// instance document's ETag, execution, history watermark, pinned
	// version and KV documents' existence, and the ids of at most 32
	// orchestrator-queue messages it wrote to the instance since. With the
	// instance's history held too (HeldHistoryEvents), the next fetch of
	// such an instance is one request, a lock batch conditioned on the
	// ETag, instead of a query and a batch; a write by another process
	// fails the condition and the fetch reads the partition. Default
	// DefaultHeldInstanceStates (10,000: about 3 MB at 300 bytes per
	// instance, 40 MB if every one held 32 messages); negative holds
	// nothing.
	HeldInstanceStates int

	// DisableEagerDispatch turns eager dispatch off (DESIGN.md §17). By
	// default, while a fetch of this process waits for work (the runtime
	// long-polls, so an idle dispatcher sits inside a fetch), an ack hands
	// it the next piece of work already locked, in the ack's own
	// transactional batch: a turn's ack creates the activities it
	// schedules locked for this process's waiting work-item fetches (up to
	// as many as wait, with matching tag filters), and an activity's ack
	// locks its instance's next turn for a waiting orchestration fetch when
	// this process holds the instance's state (HeldInstanceStates). That
	// takes a fetch's requests and its wake-up off each activity's
	// critical path: about 2.5 of 5.5 round trips per sequential activity.
	// It is bounded by the fetches that wait, so a process takes no more
	// than it has free capacity for, and it costs nothing: no request is
	// added (the locks ride on the ack's batch), and an eager turn whose
	// instance another process changed falls back to the plain ack (1 more
	// request, the ack never fails because of it). Eager hits and
	// fallbacks are counted (Provider.EagerDispatchCounts).
	DisableEagerDispatch bool

	// DisableChangeFeedWakeups starts no change-feed reader. By default
	// each Provider runs one (not one per dispatcher): queue messages
	// written by other processes wake this process's waiting fetches
	// within about ChangeFeedInterval instead of at their next candidate
	// query, a candidate query's answer is trusted, and waiting fetches
	// query again, only every 10 s while the reader's reads succeed
	// (LongPollInterval, and every 4 × LongPollInterval for waiting
	// fetches, while they fail); status watches then cover other
	// processes too (Provider.WatchesAllProcesses), and Provider.Changes
	// exposes the reader to other code. The reader backs off while no
	// other process sends this one work (after 5 s, up to one read per
	// 1.25 s and physical partition: 0.8 requests per second), so an idle
	// process costs that plus its lease heartbeat and safety queries
	// instead of one candidate query per LongPollInterval and lease (README,
	// "Several replicas"). Disabled, every waiting fetch polls every
	// LongPollInterval.
	DisableChangeFeedWakeups bool
	// ChangeFeedWakeups turned the change-feed reader on when it was off by
	// default. Setting it true changes nothing; with
	// DisableChangeFeedWakeups it is an error.
	//
	// Deprecated: the change-feed wake-ups are on by default; use
	// DisableChangeFeedWakeups to turn them off.
	ChangeFeedWakeups bool
	// ChangeFeedInterval is how often the reader reads the change feed
	// while other processes send this one work, and for a second after
	// (a read that finds nothing costs one request per physical
	// partition); default 80 ms (internal/changefeed's DefaultInterval: a
	// change is seen within 100 ms at the 95th percentile). Then it
	// reads every 4 × ChangeFeedInterval, and after 5 s the pause grows
	// (fourfold per empty read) up to 1.25 s per physical partition.
	ChangeFeedInterval time.Duration

	// MeterProvider receives the provider's metrics (the Cosmos DB
	// requests, request units and latency per provider call and operation
	// kind, throttling, retries, lost lock races, the outbox backlog and
	// reconciler deliveries; README's "Metrics" lists them). Default: the global
	// MeterProvider (otel.GetMeterProvider), which records nothing until
	// the application installs an SDK.
	MeterProvider metric.MeterProvider
	// TracerProvider, when set, receives the azcosmos SDK's spans (one per
	// Cosmos DB operation) through AzureTracingProvider, beneath the span
	// of each call's context (the runtime's turn and activity spans). It
	// replaces ClientOptions.TracingProvider; it has no effect with a ready
	// Client. Default: nil, no SDK spans.
	TracerProvider trace.TracerProvider

	// Logger receives the provider's logs. nil (the default) writes
	// warnings and errors through slog.Default() (DefaultLogger), where
	// the runtime writes too, so that an outage or a misconfiguration is
	// never silent and both come out in one format; SlogLogger routes it
	// into a slog handler of the program's; zap.NewNop() logs nothing.
	Logger *zap.Logger
	// ConnectTimeout bounds New's first contact with the account (creating
	// the database and the container, retries included); each try is
	// bounded by 5 s (or a quarter of ConnectTimeout, if shorter). Default
	// DefaultConnectTimeout (40 s); New returns then with the last cause.
	ConnectTimeout time.Duration
	// RetryBudget bounds how long one request of a call is retried
	// through an outage when the call's context has no deadline (a
	// caller's deadline wins, longer or shorter): a client call such as
	// GetOrchestrationStatus or StartOrchestration then returns within
	// about RetryBudget while the store cannot be reached, with an error
	// that matches errors.Is(err, context.DeadlineExceeded) and carries the
	// last failure (errors.As finds the *azcore.ResponseError, or the
	// transport error such as syscall.ECONNREFUSED). Default
	// DefaultRetryBudget (10 s); negative: no bound but the retries'
	// count (9 tries, about 4.5 s of waits, plus each try's own time).
	RetryBudget time.Duration
	// Now is the clock: every timestamp the provider stores (visibility,
	// lock expiry, creation times) is Now() in milliseconds since the Unix
	// epoch. Default time.Now. Tests use it to move time.
	Now func() time.Time

	// leaseSelf, when set (by tests), replaces who this process says it
	// is in its owner document (internal/leases: host, pid, process run).
	leaseSelf *leases.Self

	// fromEnv marks a Config ConfigFromEnv built, so that New's error for
	// a missing endpoint or key names the environment variables.
	fromEnv bool
}

// HTTPDoer sends one HTTP request and returns its response, as
// (*http.Client).Do does: the type of Config.HTTPClient (the same method
// set as azcore's policy.Transporter). *http.Client and the embedded
// emulator's Server.HTTPClient() satisfy it.
type HTTPDoer interface {
	// Do sends req and returns its response, or an error when no response
	// came (a refused or dropped connection, a cancelled context).
	Do(req *http.Request) (*http.Response, error)
}

// localRecipe is how New's errors for a missing account say to run on the
// embedded emulator.
const localRecipe = `to run without an account, start the embedded emulator in the process (srv, err := emulator.Start(emulator.Options{})) and set cfg.Endpoint, cfg.Key, cfg.HTTPClient = srv.Endpoint(), srv.Key(), srv.HTTPClient() (README: "Run your service locally")`

// ConfigFromEnv returns a Config from the environment: COSMOS_ENDPOINT,
// COSMOS_KEY, COSMOS_DATABASE and COSMOS_CONTAINER (DESIGN.md §9).
// Unset variables leave their fields empty, so New applies the
// defaults; it is New that reports a missing endpoint or key, naming the
// variables to set and how to run on the embedded emulator instead. With
// no COSMOS_ENDPOINT, a program that should run locally fills Endpoint,
// Key and HTTPClient from the emulator (README, "Run your service
// locally"); the fields stay settable after the call.
func ConfigFromEnv() Config {
	return Config{
		Endpoint:  os.Getenv(EnvEndpoint),
		Key:       os.Getenv(EnvKey),
		Database:  os.Getenv(EnvDatabase),
		Container: os.Getenv(EnvContainer),
		fromEnv:   true,
	}
}

// withDefaults returns c with every zero field set to its default, or an
// error naming the first invalid field.
func (c Config) withDefaults() (Config, error) {
	if c.Database == "" {
		c.Database = DefaultDatabase
	}
	if c.Container == "" {
		c.Container = DefaultContainer
	}
	if c.OrchestrationLanes == 0 {
		c.OrchestrationLanes = c.OrchestrationConcurrency
	}
	if c.OrchestrationLanes == 0 {
		c.OrchestrationLanes = 1
	}
	c.OrchestrationConcurrency = c.OrchestrationLanes
	if c.WorkerLanes == 0 {
		c.WorkerLanes = c.WorkerConcurrency
	}
	if c.WorkerLanes == 0 {
		c.WorkerLanes = 1
	}
	c.WorkerConcurrency = c.WorkerLanes
	if c.HeldInstanceStates == 0 {
		c.HeldInstanceStates = DefaultHeldInstanceStates
	}
	if c.HeldHistoryEvents == 0 {
		c.HeldHistoryEvents = DefaultHeldHistoryEvents
	}
	if c.ReconcilerInterval == 0 {
		c.ReconcilerInterval = DefaultReconcilerInterval
	}
	if c.ReconcilerAgeThreshold == 0 {
		c.ReconcilerAgeThreshold = DefaultReconcilerAgeThreshold
	}
	if c.LongPollInterval == 0 {
		c.LongPollInterval = DefaultLongPollInterval
	}
	if c.ChangeFeedInterval == 0 {
		c.ChangeFeedInterval = changefeed.DefaultInterval
	}
	if c.Leases == "" {
		c.Leases = LeasesInContainer
	}
	if c.LeaseHeartbeatInterval == 0 {
		c.LeaseHeartbeatInterval = DefaultLeaseHeartbeatInterval
	}
	if c.LeaseExpiry == 0 {
		c.LeaseExpiry = max(DefaultLeaseExpiry, 2*c.LeaseHeartbeatInterval)
	}
	if c.Logger == nil {
		c.Logger = DefaultLogger()
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.RetryBudget == 0 {
		c.RetryBudget = DefaultRetryBudget
	}
	if c.ProcessID == "" {
		c.ProcessID = defaultProcessID()
	}
	var errs []error
	if c.Client == nil {
		switch {
		case c.Endpoint == "" && c.fromEnv:
			errs = append(errs, fmt.Errorf("%s is not set and an Endpoint is required: set %s and %s to a Cosmos DB account, the official emulator or cdb-emulator (see .env.example); or, %s",
				EnvEndpoint, EnvEndpoint, EnvKey, localRecipe))
		case c.Endpoint == "":
			errs = append(errs, fmt.Errorf("an Endpoint is required (or a ready Client); %s", localRecipe))
		default:
			u, err := url.Parse(c.Endpoint)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				errs = append(errs, fmt.Errorf("the Endpoint %q is not an http(s) URL", c.Endpoint))
			}
		}
		switch {
		case c.Key == "" && c.Credential == nil && c.fromEnv && c.Endpoint != "":
			errs = append(errs, fmt.Errorf("%s is set but %s is not: a Key or a Credential is required; set %s to the account's key (the well-known key for the official emulator and cdb-emulator), or set Config.Credential in code for Microsoft Entra ID",
				EnvEndpoint, EnvKey, EnvKey))
		case c.Key == "" && c.Credential == nil && c.Endpoint != "":
			errs = append(errs, errors.New("a Key or a Credential is required (or a ready Client)"))
		case c.Key != "" && c.Credential != nil:
			errs = append(errs, errors.New("set Key or Credential, not both"))
		case c.Key != "":
			if err := checkKey(c.Key); err != nil {
				field := "Key (Config.Key)"
				if c.fromEnv {
					field = EnvKey + " (Config.Key)"
				}
				errs = append(errs, fmt.Errorf("%s is not an account key: %w", field, err))
			}
		}
	}
	if c.Client == nil && c.HTTPClient != nil && c.ClientOptions != nil && c.ClientOptions.Transport != nil {
		errs = append(errs, errors.New("set HTTPClient or ClientOptions.Transport, not both"))
	}
	for _, n := range []struct{ field, v string }{{"Database", c.Database}, {"Container", c.Container}} {
		if err := validateResourceName(n.v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.field, err))
		}
	}
	if c.OrchestrationLanes < 0 || c.OrchestrationLanes > NumDispatchSlots {
		errs = append(errs, fmt.Errorf("OrchestrationLanes %d is outside 1..%d", c.OrchestrationLanes, NumDispatchSlots))
	}
	if c.WorkerLanes < 0 || c.WorkerLanes > NumDispatchSlots {
		errs = append(errs, fmt.Errorf("WorkerLanes %d is outside 1..%d", c.WorkerLanes, NumDispatchSlots))
	}
	if c.ReconcilerInterval < 0 {
		errs = append(errs, fmt.Errorf("ReconcilerInterval %v is negative", c.ReconcilerInterval))
	}
	if c.LongPollInterval < 0 {
		errs = append(errs, fmt.Errorf("LongPollInterval %v is negative", c.LongPollInterval))
	}
	if c.ReconcilerAgeThreshold < 0 {
		errs = append(errs, fmt.Errorf("ReconcilerAgeThreshold %v is negative", c.ReconcilerAgeThreshold))
	}
	if c.ChangeFeedInterval < 0 {
		errs = append(errs, fmt.Errorf("ChangeFeedInterval %v is negative", c.ChangeFeedInterval))
	}
	if c.ChangeFeedWakeups && c.DisableChangeFeedWakeups {
		errs = append(errs, errors.New("ChangeFeedWakeups (deprecated) and DisableChangeFeedWakeups are both set"))
	}
	if c.Leases != LeasesInProcess && c.Leases != LeasesInContainer {
		errs = append(errs, fmt.Errorf("the Leases mode %q is neither %q nor %q", c.Leases, LeasesInProcess, LeasesInContainer))
	}
	if c.LeaseHeartbeatInterval < 0 {
		errs = append(errs, fmt.Errorf("LeaseHeartbeatInterval %v is negative", c.LeaseHeartbeatInterval))
	} else if c.LeaseExpiry < 2*c.LeaseHeartbeatInterval {
		errs = append(errs, fmt.Errorf("LeaseExpiry %v is shorter than twice LeaseHeartbeatInterval %v", c.LeaseExpiry, c.LeaseHeartbeatInterval))
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("cdb: invalid config: %w", errors.Join(errs...))
	}
	return c, nil
}

// checkKey checks that key looks like an account key: the primary or
// secondary key of the account (Azure portal, Keys; or az cosmosdb keys
// list), 88 characters of standard base64, or the emulators' well-known
// key. It says what is wrong and what is expected.
func checkKey(key string) error {
	if strings.TrimSpace(key) != key {
		return errors.New("it has leading or trailing white space (a line end copied with it?); remove it")
	}
	if _, err := base64.StdEncoding.DecodeString(key); err != nil {
		return fmt.Errorf("it is not standard base64 (%v); expected the account's primary or secondary key as the portal's Keys page or `az cosmosdb keys list` shows it (88 characters ending in ==), or the emulators' well-known key", err)
	}
	return nil
}

// validateResourceName checks a database or container name against the
// service's rules: 1 to 255 characters, none of / \ ? #, no trailing space.
func validateResourceName(name string) error {
	switch {
	case name == "":
		return errors.New("name is empty")
	case len(name) > 255:
		return fmt.Errorf("name is %d characters; at most 255 are allowed", len(name))
	case strings.ContainsAny(name, `/\?#`):
		return fmt.Errorf("name %q contains one of / \\ ? #", name)
	case strings.HasSuffix(name, " "):
		return fmt.Errorf("name %q ends with a space", name)
	}
	return nil
}

// DefaultLogger is the provider's logger when Config.Logger is nil:
// warnings and errors, through slog.Default()'s handler as it is when
// DefaultLogger is called (SlogLogger), which is also where the runtime
// writes by default (runtime.Options.Logger), so that a program's logs come
// out in one format: the standard library's text lines on standard error
// unless the program set another default (slog.SetDefault).
//
// The store health's lines (logger "cdb.store") pass at Info too, so that
// the end of an outage ("store reachable again") is seen where its start
// was.
func DefaultLogger() *zap.Logger {
	return zap.New(warnAndStoreHealth{slogzap.Core(slog.Default().Handler(), zapcore.InfoLevel)})
}

// SlogLogger returns a zap logger for Config.Logger that writes the
// entries level enables (zapcore.WarnLevel, zapcore.InfoLevel...) through
// h: one slog record each, with the logger's name as the attribute
// "logger" and the zap fields as attributes. Give the runtime
// (runtime.Options.Logger) slog.New(h) and both write through h.
func SlogLogger(h slog.Handler, level zapcore.LevelEnabler) *zap.Logger {
	return zap.New(slogzap.Core(h, level))
}

// storeHealthLogger is the name of the store health's logger.
const storeHealthLogger = "cdb.store"

// warnAndStoreHealth is a zap core that passes warnings and above, and the
// store health's Info lines.
type warnAndStoreHealth struct{ zapcore.Core }

// With returns the core with fields added, still filtering.
func (c warnAndStoreHealth) With(f []zapcore.Field) zapcore.Core {
	return warnAndStoreHealth{c.Core.With(f)}
}

// Check admits warnings and above, and the store health's Info lines.
func (c warnAndStoreHealth) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if e.Level >= zapcore.WarnLevel || (e.Level == zapcore.InfoLevel && e.LoggerName == storeHealthLogger) {
		return c.Core.Check(e, ce)
	}
	return ce
}
