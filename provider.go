// Provider: the type, New (connecting and starting its goroutines), Close,
// Name, Version and Container.

package cdb

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"go.uber.org/zap"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/candidates"
	"github.com/duroxide-go/duroxide-cdb/internal/changefeed"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/held"
	"github.com/duroxide-go/duroxide-cdb/internal/leases"
	"github.com/duroxide-go/duroxide-cdb/internal/pkheader"
	"github.com/duroxide-go/duroxide-cdb/internal/statuswatch"
)

// ProviderName and ProviderVersion are what Name and Version report.
const (
	ProviderName    = "cosmosdb"
	ProviderVersion = "0.1.0"
)

// Provider is the Cosmos DB provider. It is safe for concurrent use by many
// goroutines. Create it with New; Close stops its reconciler.
type Provider struct {
	cfg Config
	// idle paces the change-feed reader of an idle process
	// (idle_pacing.go).
	idle idlePacer
	// statusWatches wakes status waits of this process on its acks.
	statusWatches statuswatch.Watches
	client        *azcosmos.Client
	ownClient     bool
	// held is the history kept decoded between turns (internal/held);
	// nil holds nothing.
	held *held.Histories
	// heldStates is the instance states kept for one-request fetches
	// (internal/held); nil holds nothing.
	heldStates *held.States
	// newClient builds a fresh client when ownClient (see clientFactory).
	newClient func() (*azcosmos.Client, error)
	container *azcosmos.ContainerClient
	log       *zap.Logger
	retry     retrier

	orchLeases   LeaseProvider
	workerLeases LeaseProvider
	// leases, with LeasesInContainer, owns this process's share of the
	// slots (internal/leases); nil otherwise.
	leases *leases.Coordinator
	// feed, unless DisableChangeFeedWakeups, reads the change feed
	// (changefeed_wakeups.go); nil otherwise.
	feed *changefeed.Reader

	locks *lockCache
	// usage counts every Cosmos DB answer (usage.go); metrics records the
	// provider's metrics (metrics.go).
	usage   usageCounters
	metrics *providerMetrics
	// orchPool and workPool are this process's candidates of the two
	// queues (pool.go).
	orchPool     *candidates.Pool
	workPool     *candidates.Pool
	pollInterval time.Duration
	// fetchTracer, when set (by tests, before the first call), is told
	// every step of every fetch.
	fetchTracer func(fetchEvent)

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

var (
	_ duroxide.Provider      = (*Provider)(nil)
	_ duroxide.ProviderAdmin = (*Provider)(nil)
)

// New connects to the account cfg names, creates the database and container
// when they are missing (partition key /instanceId, large partition keys,
// the indexing policy of DESIGN.md §2.3 with the paths this
// provider adds, per-item time to live for tombstones; a 409 means one
// exists), and starts the outbox reconciler and, unless
// DisableChangeFeedWakeups, the change-feed reader. An invalid cfg is an
// error naming every bad field; nothing is contacted then. A change-feed
// reader whose first read fails (after the retries of any read) is logged
// as a warning and left out: the provider then polls as with
// DisableChangeFeedWakeups (Changes returns nil).
//
// Contacting the account is retried with a backoff from 500 ms doubling to
// at most 5 s, each retry logged, at most 10 tries, each try bounded by 5 s
// (a quarter of ConnectTimeout if shorter) and all of them by
// Config.ConnectTimeout (default 40 s, after which New
// returns an error saying it gave up, wrapping the last cause): throttling
// (429, its retry hint honoured), 5xx and timeouts heal by waiting. An
// unreachable endpoint (refused connection, unknown host) gets 3 tries
// (about 1.5 s); an untrusted certificate or a refused key (401, 403) none.
// The error wraps the cause, for errors.As and errors.Is
// (x509.UnknownAuthorityError, *net.DNSError, syscall.ECONNREFUSED,
// *azcore.ResponseError), and says what to check; when ctx ends first it
// wraps both ctx's error and the last cause.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	p := &Provider{
		cfg:          cfg,
		log:          cfg.Logger.Named("cdb"),
		retry:        defaultRetrier.withClosed(stop),
		orchLeases:   cfg.OrchestrationLeases,
		workerLeases: cfg.WorkerLeases,
		locks:        newLockCache(),
		pollInterval: cfg.LongPollInterval,
		stop:         stop,
	}
	p.orchPool = candidates.New(p.viewLifetime, DispatchSlot, p.nowMs)
	p.workPool = candidates.New(p.viewLifetime, DispatchSlot, p.nowMs)
	if cfg.HeldHistoryEvents > 0 {
		p.held = held.NewHistories(cfg.HeldHistoryEvents)
	}
	if cfg.HeldInstanceStates > 0 {
		p.heldStates = held.NewStates(cfg.HeldInstanceStates)
	}
	p.metrics = newProviderMetrics(cfg.MeterProvider, p)
	p.retry.onRetry = p.metrics.retried
	ctx = cosmos.WithCall(ctx, "new")
	inContainer := cfg.Leases == LeasesInContainer && (p.orchLeases == nil || p.workerLeases == nil)
	if p.orchLeases == nil && !inContainer {
		p.orchLeases = NewInMemoryLeaseProvider(cfg.OrchestrationConcurrency)
	}
	if p.workerLeases == nil && !inContainer {
		p.workerLeases = NewInMemoryLeaseProvider(cfg.WorkerConcurrency)
	}
	p.client = cfg.Client
	if p.client == nil {
		if p.newClient, err = clientFactory(cfg, p); err != nil {
			return nil, err
		}
		if p.client, err = p.newClient(); err != nil {
			return nil, fmt.Errorf("cdb: create Cosmos DB client: %w", err)
		}
		p.ownClient = true
	}
	if err := p.ensureInfrastructure(ctx); err != nil {
		p.metrics.close()
		p.closeClient()
		return nil, err
	}
	p.container, err = p.client.NewContainer(cfg.Database, cfg.Container)
	if err != nil {
		p.metrics.close()
		p.closeClient()
		return nil, fmt.Errorf("cdb: container client: %w", err)
	}
	if inContainer {
		p.leases = newLeaseCoordinator(p)
		if p.orchLeases == nil {
			p.orchLeases = containerLeases{p.leases.Queue(0)}
		}
		if p.workerLeases == nil {
			p.workerLeases = containerLeases{p.leases.Queue(1)}
		}
	}
	if !cfg.DisableChangeFeedWakeups {
		if err := p.startChangeFeed(ctx); err != nil {
			if ctx.Err() != nil {
				if p.leases != nil {
					p.leases.Close(ctx)
				}
				p.metrics.close()
				p.closeClient()
				return nil, err
			}
			// The wake-ups are an optimisation: an account that refuses
			// change-feed reads (a data-plane role without
			// readChangeFeed, an emulator without the change feed) still
			// gets a working provider, whose fetches poll.
			p.log.Warn("change-feed wake-ups unavailable; waiting fetches poll every LongPollInterval", zap.Error(err))
		}
	}
	p.metrics.registerGauges(p)
	if !cfg.DisableReconciler {
		p.wg.Add(1)
		go p.reconcileLoop()
	}
	return p, nil
}

// fetchStarted notes that a fetch of queue q (0 orchestrations, 1 work
// items) starts and returns the function that notes its end: with
// LeasesInContainer, a Provider claims slots of the queues it fetches from
// (leases.Coordinator.FetchStarted), and the error is that of the claim.
func (p *Provider) fetchStarted(ctx context.Context, q int) (func(), error) {
	if p.leases == nil {
		return func() {}, nil
	}
	return p.leases.FetchStarted(ctx, q)
}

// Ping checks that the provider's container answers, for a readiness probe:
// one request (a read of the container's properties, about 1 RU), tried
// once, no retry, bounded by ctx. It returns nil when the container
// answered, a *duroxide.ProviderError otherwise: wrapping
// ErrContainerNotFound when the container or its database does not exist,
// retryable when the account is unreachable or throttling, permanent
// ("the provider is closed") after Close.
func (p *Provider) Ping(ctx context.Context) error {
	once := p.retry
	once.attempts = 1
	return mapError("ping", once.do(ctx, readRequest, func(ctx context.Context) error {
		_, err := p.container.Read(ctx, nil)
		return err
	}))
}

// Close stops the reconciler and waits for it; intents still pending stay
// in the container and the next provider on it delivers them
// (DESIGN.md §4.5). Long-polling fetches return at once (nil), and
// every call made afterwards, or still retrying, fails with a permanent
// ProviderError ("the provider is closed") without sending a request.
// Close is idempotent and always returns nil.
func (p *Provider) Close() error {
	p.closeOnce.Do(func() {
		if p.feed != nil {
			p.feed.Close()
		}
		if p.leases != nil {
			ctx, cancel := context.WithTimeout(cosmos.WithCall(context.Background(), "close"), p.cfg.LeaseExpiry)
			p.leases.Close(ctx)
			cancel()
		}
		close(p.stop)
		p.wg.Wait()
		p.metrics.close()
		p.closeClient()
	})
	return nil
}

// clientFactory returns the function that builds the provider's azcosmos
// client from cfg: the caller's ClientOptions plus the partition key header
// fix, tracing, request accounting, and no azcore retries (the provider
// retries itself). New calls it again to start afresh after a failed first
// contact, which azcosmos would otherwise repeat from its cache for 5
// minutes.
func clientFactory(cfg Config, p *Provider) (func() (*azcosmos.Client, error), error) {
	opts := azcosmos.ClientOptions{}
	if cfg.ClientOptions != nil {
		opts = *cfg.ClientOptions
	}
	if cfg.HTTPClient != nil {
		opts.Transport = cfg.HTTPClient
	}
	opts.PerCallPolicies = append(append([]policy.Policy(nil), opts.PerCallPolicies...), PartitionKeyHeaderPolicy())
	if cfg.TracerProvider != nil {
		opts.TracingProvider = AzureTracingProvider(cfg.TracerProvider)
	}
	opts.PerRetryPolicies = append(append([]policy.Policy(nil), opts.PerRetryPolicies...), requestPolicy{usage: &p.usage, metrics: p.metrics})
	if r := opts.Retry; r.MaxRetries == 0 && r.TryTimeout == 0 && r.RetryDelay == 0 && r.MaxRetryDelay == 0 && r.StatusCodes == nil && r.ShouldRetry == nil {
		opts.Retry = policy.RetryOptions{MaxRetries: -1}
	}
	if cfg.Credential != nil {
		return func() (*azcosmos.Client, error) { return azcosmos.NewClient(cfg.Endpoint, cfg.Credential, &opts) }, nil
	}
	cred, err := azcosmos.NewKeyCredential(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("cdb: create Cosmos DB client: %w", err)
	}
	return func() (*azcosmos.Client, error) { return azcosmos.NewClientWithKey(cfg.Endpoint, cred, &opts) }, nil
}

func (p *Provider) closeClient() {
	if p.ownClient && p.client != nil {
		p.client.Close()
	}
}

// Name returns "cosmosdb".
func (p *Provider) Name() string { return ProviderName }

// DispatchConcurrency returns Config.OrchestrationConcurrency and
// WorkerConcurrency after defaults: the lanes each queue's dispatch slots
// are split into (duroxide.DispatchConcurrency). A runtime on this provider
// runs at least that many dispatchers of each kind by default and refuses
// to start with fewer.
func (p *Provider) DispatchConcurrency() (orchestration, worker int) {
	return p.cfg.OrchestrationConcurrency, p.cfg.WorkerConcurrency
}

// Version returns the provider's version.
func (p *Provider) Version() string { return ProviderVersion }

// Container returns the container client the provider uses (for tools and
// tests that inspect documents).
func (p *Provider) Container() *azcosmos.ContainerClient { return p.container }

// Logger returns the logger the provider writes to (Config.Logger, or
// DefaultLogger when that was nil), so that the runtime can log through the
// same one: runtime.Options{Logger: slog.New(zapslog.NewHandler(p.Logger().Core()))}
// with go.uber.org/zap/exp/zapslog (README, "Logs, outages and health").
func (p *Provider) Logger() *zap.Logger { return p.cfg.Logger }

// nowMs returns the configured clock in milliseconds since the Unix epoch.
func (p *Provider) nowMs() int64 { return p.cfg.Now().UnixMilli() }

// PartitionKeyHeaderPolicy returns an HTTP pipeline policy that makes the
// partition key header valid JSON. azcosmos v1.5.0 writes string partition
// key values with strconv.QuoteToASCII, Go's quoting, which is JSON except
// for characters outside the Basic Multilingual Plane (Go writes \U0001f680
// where JSON needs the surrogate pair \ud83d\ude80) and a few ASCII control
// characters (\a, \v, \x00): for an instance id holding an emoji the
// service answers 400 ("partition key header has an invalid format"). The
// policy re-encodes such headers; valid ones pass untouched.
//
// New adds it to the clients it builds. A ready client passed in
// Config.Client needs it in its ClientOptions.PerCallPolicies for such
// instance ids to work.
func PartitionKeyHeaderPolicy() policy.Policy { return pkheader.Policy{} }
