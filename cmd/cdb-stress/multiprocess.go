package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// The multi-process mode (-processes 1,2,4): for each N, N real OS
// processes (this binary re-executed with childEnv set) run the runtime on
// one container, the same total dispatchers split across them, with
// leases in the container and change-feed wake-ups; this process starts
// the orchestrations, optionally tortures the children (-chaos: a SIGKILL
// of a random child and a replacement every -chaos-every, and once a
// SIGSTOP past the lock timeout and the lease expiry, then SIGCONT),
// waits for every orchestration and verifies the container.

// mpOptions configure the multi-process mode.
type mpOptions struct {
	processes      []int
	orchestrations int
	dispatchers    dispatchConfig // total across the processes
	chaos          bool
	chaosEvery     time.Duration
	// maxKills stops the kills after that many (0: no limit).
	maxKills   int
	timeout    time.Duration
	partitions int
	// leases and changeFeed are the children's Config.Leases and
	// change-feed wake-ups (Config.DisableChangeFeedWakeups when false).
	leases     cdb.LeaseMode
	changeFeed bool
	// leaseHeartbeat and leaseExpiry are the children's
	// Config.LeaseHeartbeatInterval and LeaseExpiry (-lease-heartbeat,
	// -lease-expiry; mpLeaseHeartbeat and mpLeaseExpiry when zero).
	leaseHeartbeat, leaseExpiry time.Duration
	// latency is the embedded emulator's simulated per-request latency.
	latency emulator.Latency
}

// mpResult is one N's outcome.
type mpResult struct {
	n              int
	orchestrations int
	wall           time.Duration
	p95            time.Duration
	requests       int64
	// byOp are the emulator's requests of the run per operation kind,
	// every process's (the starting process's starts and polls
	// included); nil against COSMOS_ENDPOINT.
	byOp map[emulator.OpKind]int64
	// client are the starting process's own requests (in byOp, not in
	// requests).
	client int64
	// calls are the children's requests by provider call (those that
	// stopped cleanly: a killed child reports none).
	calls          map[string]int64
	races          int64
	moves          int64
	activities     int
	reexecutions   int
	kills, freezes int
	problems       []string
}

// mpChild is one running child process.
type mpChild struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// mpRun holds the state of one N's run.
type mpRun struct {
	mu       sync.Mutex
	children []*mpChild
	acts     map[string]int // instance + " " + step -> executions
	requests int64
	races    int64
	moves    int64
	calls    map[string]int64
	stats    int
	kills    int
	freezes  int
	spawn    func() (*mpChild, error)
}

// runMultiProcess runs every N of o and writes the report; it returns the
// exit status.
func runMultiProcess(ctx context.Context, o mpOptions, args []string, record string, stdout, stderr io.Writer) int {
	// The children's stderr and this process's messages go to stderr from
	// several goroutines (one copier per child).
	stderr = &lockedWriter{w: stderr}
	endpoint, key := os.Getenv(cdb.EnvEndpoint), os.Getenv(cdb.EnvKey)
	var emu *emulator.Server
	if endpoint == "" {
		// An emulator server the children reach over loopback, from the
		// test kit.
		acct, err := cdbtest.OpenEmulator(emulator.Options{PhysicalPartitions: o.partitions, Latency: o.latency})
		if err != nil {
			fmt.Fprintln(stderr, "cdb-stress:", err)
			return exitFailures
		}
		defer acct.Close()
		emu, endpoint, key = acct.Emulator(), acct.Endpoint(), acct.Key()
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "cdb-stress:", err)
		return exitFailures
	}
	load := loadAverage()
	runID := time.Now().UTC().Format("150405")
	var results []mpResult
	for _, n := range o.processes {
		r, err := runProcesses(ctx, o, self, endpoint, key, fmt.Sprintf("mp-%s-%d", runID, n), n, emu, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "cdb-stress: %d processes: %v\n", n, err)
			return exitFailures
		}
		results = append(results, r)
	}
	store := "embedded emulator server on " + endpoint + fmt.Sprintf(" (%d physical partitions)", o.partitions)
	if emu == nil {
		store = "COSMOS_ENDPOINT"
	}
	report := mpReport(o, results, store)
	_, _ = io.WriteString(stdout, report)
	if record != "" {
		if err := appendRecord(record, args, report, load); err != nil {
			fmt.Fprintln(stderr, "cdb-stress: record:", err)
			return exitFailures
		}
	}
	for _, r := range results {
		if len(r.problems) > 0 {
			return exitFailures
		}
	}
	return exitOK
}

// lockedWriter serializes the writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// runProcesses runs one N.
func runProcesses(ctx context.Context, o mpOptions, self, endpoint, key, container string, n int, emu *emulator.Server, stderr io.Writer) (mpResult, error) {
	database := cdb.DefaultDatabase
	if db := os.Getenv(cdb.EnvDatabase); db != "" {
		database = db
	}
	// This process is only a client, with the children's lease mode (a
	// Provider that never fetches claims no slot), no change feed, no
	// reconciler.
	pcfg := mpProviderConfig(endpoint, key, database, container, o.leases, o.changeFeed, o.leaseHeartbeat, o.leaseExpiry)
	pcfg.DisableChangeFeedWakeups, pcfg.DisableReconciler = true, true
	p, err := cdb.New(ctx, pcfg)
	if err != nil {
		return mpResult{}, err
	}
	defer p.Close()
	client := runtime.NewClient(p)
	run := &mpRun{acts: map[string]int{}, calls: map[string]int64{}}
	orchPer, workPer := max(1, o.dispatchers.orchestration/n), max(1, o.dispatchers.worker/n)
	run.spawn = func() (*mpChild, error) {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), childEnv+"=1", childEndpointEnv+"="+endpoint, childKeyEnv+"="+key,
			childDatabaseEnv+"="+database, childContainerEnv+"="+container,
			childOrchEnv+"="+strconv.Itoa(orchPer), childWorkerEnv+"="+strconv.Itoa(workPer),
			childLeasesEnv+"="+string(o.leases), childChangeFeedEnv+"="+strconv.FormatBool(o.changeFeed),
			childHeartbeatEnv+"="+pcfg.LeaseHeartbeatInterval.String(), childExpiryEnv+"="+pcfg.LeaseExpiry.String())
		cmd.Stderr = stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		c := &mpChild{cmd: cmd, done: make(chan struct{})}
		scanned := make(chan struct{})
		go func() {
			defer close(scanned)
			run.scan(out)
		}()
		go func() {
			<-scanned
			_ = cmd.Wait()
			close(c.done)
		}()
		run.mu.Lock()
		run.children = append(run.children, c)
		run.mu.Unlock()
		return c, nil
	}
	for i := 0; i < n; i++ {
		if _, err := run.spawn(); err != nil {
			return mpResult{}, err
		}
	}
	defer run.stopAll()
	startUsage := p.Usage()
	var startRequests int64
	var startCounters map[emulator.OpKind]emulator.OpCounters
	if emu != nil {
		startCounters = emu.Counters()
		startRequests = totalRequests(emu)
	}
	start := time.Now()
	instances := make([]string, o.orchestrations)
	for i := range instances {
		instances[i] = fmt.Sprintf("%s-%04d", container, i)
		if err := client.StartOrchestration(ctx, instances[i], chainOrchestration, instances[i]); err != nil {
			return mpResult{}, err
		}
	}
	chaosCtx, stopChaos := context.WithCancel(ctx)
	chaosDone := make(chan struct{})
	go func() {
		defer close(chaosDone)
		if o.chaos {
			run.chaos(chaosCtx, o.chaosEvery, o.maxKills, stderr)
		}
	}()
	deadline := time.Now().Add(o.timeout)
	var finished int
	for time.Now().Before(deadline) {
		done, err := client.ListInstancesByStatus(ctx, duroxide.StatusCompleted)
		if err == nil {
			failed, _ := client.ListInstancesByStatus(ctx, duroxide.StatusFailed)
			finished = countPrefix(done, container) + countPrefix(failed, container)
			if finished >= o.orchestrations && (!o.chaos || run.chaosHappened()) {
				break
			}
		}
		select {
		case <-ctx.Done():
			stopChaos()
			return mpResult{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	wall := time.Since(start)
	stopChaos()
	<-chaosDone
	run.stopAll()
	res := mpResult{n: n, orchestrations: o.orchestrations, wall: wall}
	if finished < o.orchestrations {
		res.problems = append(res.problems, fmt.Sprintf("%d of %d orchestrations finished within %v", finished, o.orchestrations, o.timeout))
	}
	run.mu.Lock()
	res.races, res.moves, res.kills, res.freezes = run.races, run.moves, run.kills, run.freezes
	for _, c := range run.acts {
		res.activities += c
		res.reexecutions += c - 1
	}
	res.requests = run.requests
	res.calls = run.calls
	run.mu.Unlock()
	if emu != nil {
		// Every process's requests, the killed ones included, less this
		// client's own (starts and status polls).
		res.requests = totalRequests(emu) - startRequests - (p.Usage().Requests - startUsage.Requests)
		res.client = p.Usage().Requests - startUsage.Requests
		res.byOp = map[emulator.OpKind]int64{}
		for op, c := range emu.Counters() {
			if d := c.Requests - startCounters[op].Requests; d > 0 {
				res.byOp[op] = d
			}
		}
	}
	res.p95, res.problems = verifyRun(ctx, p, client, instances, res.problems)
	return res, nil
}

func countPrefix(ids []string, prefix string) int {
	n := 0
	for _, id := range ids {
		if strings.HasPrefix(id, prefix+"-") {
			n++
		}
	}
	return n
}

func totalRequests(emu *emulator.Server) int64 {
	var n int64
	for _, c := range emu.Counters() {
		n += c.Requests
	}
	return n
}

// scan reads a child's stdout.
func (r *mpRun) scan(out io.Reader) {
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		r.mu.Lock()
		switch {
		case len(f) == 3 && f[0] == "ACT":
			r.acts[f[1]+" "+f[2]]++
		case len(f) >= 1 && f[0] == "STATS":
			r.stats++
			for _, kv := range f[1:] {
				k, v, _ := strings.Cut(kv, "=")
				x, _ := strconv.ParseInt(v, 10, 64)
				switch k {
				case "requests":
					r.requests += x
				case "races":
					r.races += x
				case "moves":
					r.moves += x
				case "calls":
					addCalls(r.calls, v)
				}
			}
		}
		r.mu.Unlock()
	}
}

// chaosHappened reports whether at least one kill and one freeze were
// done, so that a chaos run always tortures at least that much.
func (r *mpRun) chaosHappened() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.kills > 0 && r.freezes > 0
}

// alive returns the children still running.
func (r *mpRun) alive() []*mpChild {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*mpChild
	for _, c := range r.children {
		select {
		case <-c.done:
		default:
			out = append(out, c)
		}
	}
	return out
}

// chaos freezes one child past its lock timeouts (and the lease expiry)
// first, then kills a random child and starts a replacement every period.
func (r *mpRun) chaos(ctx context.Context, every time.Duration, maxKills int, stderr io.Writer) {
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	t := time.NewTicker(every)
	defer t.Stop()
	var frozen sync.WaitGroup
	defer frozen.Wait()
	for tick := 0; ; tick++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		kids := r.alive()
		if len(kids) == 0 {
			continue
		}
		victim := kids[rng.Intn(len(kids))]
		if tick == 0 {
			if victim.cmd.Process.Signal(syscall.SIGSTOP) == nil {
				r.mu.Lock()
				r.freezes++
				r.mu.Unlock()
				frozen.Add(1)
				go func() {
					defer frozen.Done()
					time.Sleep(max(mpLockTimeout, mpWorkerLock) + 500*time.Millisecond)
					_ = victim.cmd.Process.Signal(syscall.SIGCONT)
				}()
			}
			continue
		}
		r.mu.Lock()
		enough := maxKills > 0 && r.kills >= maxKills
		r.mu.Unlock()
		if enough {
			continue
		}
		if victim.cmd.Process.Signal(syscall.SIGKILL) == nil {
			<-victim.done
			r.mu.Lock()
			r.kills++
			r.mu.Unlock()
			if _, err := r.spawn(); err != nil {
				fmt.Fprintln(stderr, "cdb-stress: replacement:", err)
			}
		}
	}
}

// stopAll asks every child to stop (SIGTERM, SIGCONT for a frozen one)
// and waits for them; one still running after 20 s is killed.
func (r *mpRun) stopAll() {
	for _, c := range r.alive() {
		_ = c.cmd.Process.Signal(syscall.SIGCONT)
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range r.alive() {
		select {
		case <-c.done:
		case <-time.After(20 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	}
}

// verifyRun checks every orchestration and the container, returning the
// p95 latency (creation to completion) and the problems found.
func verifyRun(ctx context.Context, p *cdb.Provider, client *runtime.Client, instances []string, problems []string) (time.Duration, []string) {
	var lat []time.Duration
	for _, inst := range instances {
		info, err := client.GetInstanceInfo(ctx, inst)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", inst, err))
			continue
		}
		want := expectedChainOutput(inst)
		if info.Status != duroxide.StatusCompleted || info.Output == nil || !outputIs(*info.Output, want) {
			out := "<nil>"
			if info.Output != nil {
				out = *info.Output
			}
			problems = append(problems, fmt.Sprintf("%s: status %s output %s, want Completed %q", inst, info.Status, out, want))
			continue
		}
		lat = append(lat, time.Duration(info.UpdatedAt-info.CreatedAt)*time.Millisecond)
		hist, err := client.ReadExecutionHistory(ctx, inst, 1)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: history: %v", inst, err))
			continue
		}
		problems = append(problems, checkHistory(inst, hist)...)
	}
	problems = append(problems, checkContainer(ctx, p)...)
	if len(lat) == 0 {
		return 0, problems
	}
	slices.Sort(lat)
	return lat[min(len(lat)-1, len(lat)*95/100)], problems
}

// outputIs compares an orchestration's output with the expected string
// (the runtime may store it as a JSON string).
func outputIs(out, want string) bool {
	if out == want {
		return true
	}
	var s string
	return json.Unmarshal([]byte(out), &s) == nil && s == want
}

// checkHistory finds duplicate event ids and completions without their
// schedule.
func checkHistory(inst string, hist []duroxide.Event) []string {
	var problems []string
	ids := map[uint64]bool{}
	scheduled := map[uint64]bool{}
	completed := map[uint64]bool{}
	for _, e := range hist {
		if ids[e.EventID] {
			problems = append(problems, fmt.Sprintf("%s: duplicate history event %d", inst, e.EventID))
		}
		ids[e.EventID] = true
		switch e.Kind.(type) {
		case duroxide.ActivityScheduled:
			scheduled[e.EventID] = true
		case duroxide.ActivityCompleted:
			if e.SourceEventID == nil || !scheduled[*e.SourceEventID] {
				problems = append(problems, fmt.Sprintf("%s: completion %d without its schedule", inst, e.EventID))
			} else if completed[*e.SourceEventID] {
				problems = append(problems, fmt.Sprintf("%s: activity %d completed twice", inst, *e.SourceEventID))
			} else {
				completed[*e.SourceEventID] = true
			}
		}
	}
	if len(completed) != mpActivitySteps {
		problems = append(problems, fmt.Sprintf("%s: %d activity completions, want %d", inst, len(completed), mpActivitySteps))
	}
	return problems
}

// checkContainer finds locked instances and queue messages left behind.
func checkContainer(ctx context.Context, p *cdb.Provider) []string {
	var problems []string
	now := time.Now().UnixMilli()
	for _, q := range []struct{ what, query string }{
		{"instances still locked", "SELECT c.instanceId FROM c WHERE c.type = 'instance' AND c.lockedUntil > @now"},
		{"queue messages left", "SELECT c.instanceId FROM c WHERE c.type IN ('orch_queue', 'worker_queue') AND c.visibleAt >= 0 AND @now >= 0"},
	} {
		pager := p.Container().NewQueryItemsPager(q.query, azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{
			QueryParameters: []azcosmos.QueryParameter{{Name: "@now", Value: now}},
		})
		n := 0
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return append(problems, fmt.Sprintf("%s: %v", q.what, err))
			}
			n += len(page.Items)
		}
		if n > 0 {
			problems = append(problems, fmt.Sprintf("%d %s", n, q.what))
		}
	}
	return problems
}

// mpReport formats the results.
func mpReport(o mpOptions, results []mpResult, store string) string {
	var b strings.Builder
	hb, exp := o.leaseHeartbeat, o.leaseExpiry
	if hb <= 0 || exp <= 0 {
		hb, exp = mpLeaseHeartbeat, mpLeaseExpiry
	}
	fmt.Fprintf(&b, "Multi-process run: %d Chain orchestrations (%d activities each, %v of work) per N, %s dispatchers in total, store: %s; lease heartbeat %v, expiry %v; chaos: %v\n",
		o.orchestrations, mpActivitySteps, mpActivityWorkDur, o.dispatchers, store, hb, exp, o.chaos)
	fmt.Fprintf(&b, "%-3s %9s %9s %10s %12s %12s %11s %11s %6s %7s  %s\n",
		"N", "orch/s", "p95", "req/orch", "races/orch", "lease moves", "activities", "re-executed", "kills", "freezes", "verification")
	for _, r := range results {
		verdict := "ok: every orchestration completed once with the expected output, no duplicate event, no completion without schedule, nothing locked, queues empty"
		if len(r.problems) > 0 {
			shown := r.problems
			if len(shown) > 5 {
				shown = append(shown[:5:5], fmt.Sprintf("... %d more", len(r.problems)-5))
			}
			verdict = "FAILED: " + strings.Join(shown, "; ")
		}
		fmt.Fprintf(&b, "%-3d %9.1f %9s %10.1f %12.3f %12d %11d %11d %6d %7d  %s\n",
			r.n, float64(r.orchestrations)/r.wall.Seconds(), r.p95.Round(time.Millisecond),
			float64(r.requests)/float64(r.orchestrations), float64(r.races)/float64(r.orchestrations),
			r.moves, r.activities, r.reexecutions, r.kills, r.freezes, verdict)
	}
	b.WriteString("races and lease moves are reported by processes that stopped cleanly (a killed process reports none); requests are counted by the emulator (every process, the killed ones included).\n")
	for _, r := range results {
		if line := opBreakdown(r.byOp, r.orchestrations); line != "" {
			fmt.Fprintf(&b, "N=%d requests per orchestration by operation: %s (the starting process's starts and status polls included: %.2f)\n",
				r.n, line, float64(r.client)/float64(max(r.orchestrations, 1)))
		}
		if line := callBreakdown(r.calls, r.orchestrations); line != "" {
			fmt.Fprintf(&b, "N=%d requests per orchestration by provider call (the processes that stopped cleanly): %s\n", r.n, line)
		}
	}
	return b.String()
}

// opBreakdown formats requests per orchestration by operation kind, the
// largest first ("ChangeFeed 3.41, Batch 6.02, ..."); "" for no counts.
func opBreakdown(byOp map[emulator.OpKind]int64, orchestrations int) string {
	ops := make([]emulator.OpKind, 0, len(byOp))
	for op := range byOp {
		ops = append(ops, op)
	}
	slices.SortFunc(ops, func(a, b emulator.OpKind) int {
		if byOp[a] != byOp[b] {
			return int(byOp[b] - byOp[a])
		}
		return strings.Compare(string(a), string(b))
	})
	parts := make([]string, 0, len(ops))
	for _, op := range ops {
		parts = append(parts, fmt.Sprintf("%s %.2f", op, float64(byOp[op])/float64(max(orchestrations, 1))))
	}
	return strings.Join(parts, ", ")
}

// parseProcesses parses "1,2,4".
func parseProcesses(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 || n > 32 {
			return nil, fmt.Errorf("-processes: %q is not a process count 1..32", part)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("-processes: empty")
	}
	return out, nil
}
