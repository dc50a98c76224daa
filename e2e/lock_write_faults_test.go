package e2e_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// lockWriteFault is one lock write of an orchestration with one activity,
// matched by a fault rule on a private emulator.
type lockWriteFault struct {
	name string
	// write is the "write" field of the provider's log line on reading
	// the write back ("" for lease batches, whose line has none).
	write string
	// rule matches the lock write of instance inst.
	rule func(inst string) emulator.FaultRule
	// session schedules the activity on a session (its fetch claims it).
	session bool
	// otherClient starts the orchestration from another provider, so that
	// the runtime's provider holds no state of the instance and reads its
	// partition before the lock batch.
	otherClient bool
}

// sessionDocIDOf is the session document's id the provider writes (ids.go:
// "session-" and the session id's encoding), for matching its claim.
func sessionDocIDOf(sid string) string {
	return "session-b" + base64.RawURLEncoding.EncodeToString([]byte(sid))
}

var lockWriteFaults = []lockWriteFault{
	{name: "work-item-lock", write: "work item lock", rule: func(inst string) emulator.FaultRule {
		return emulator.FaultRule{Op: emulator.OpPatchItem, PartitionKey: &inst, Times: 1}
	}},
	{name: "orchestration-lock-held", write: "orchestration lock (held state)", rule: func(inst string) emulator.FaultRule {
		return emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &inst, ItemID: ptr("instance"), Times: 1}
	}},
	{name: "orchestration-lock-read", write: "orchestration lock", otherClient: true, rule: func(inst string) emulator.FaultRule {
		return emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &inst, ItemID: ptr("instance"), Times: 1}
	}},
	{name: "session-claim", write: "session claim", session: true, rule: func(inst string) emulator.FaultRule {
		return emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &inst, ItemID: ptr(sessionDocIDOf("s1")), Times: 1}
	}},
	{name: "lease-claim-orch", rule: func(string) emulator.FaultRule {
		return emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: ptr(cdb.LeasePartitionKey), ItemID: ptr("slot-orch-000"), Times: 1}
	}},
	{name: "lease-claim-work", rule: func(string) emulator.FaultRule {
		return emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: ptr(cdb.LeasePartitionKey), ItemID: ptr("slot-work-000"), Times: 1}
	}},
}

// runWithLockWriteFault runs one orchestration with one activity on a
// private emulator, with f's lock write faulted by fault (nil: no fault),
// change-feed wake-ups on and the runtime's default lock timeouts, and
// returns how long the orchestration took from the runtime's start to its
// completion and whether the fault hit the lock write (the provider logged
// reading it back). Eager dispatch is off: it skips the fetches' lock
// writes.
func runWithLockWriteFault(t testing.TB, f lockWriteFault, fault *emulator.Fault) (time.Duration, bool) {
	t.Helper()
	must := func(errs ...error) {
		t.Helper()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	a := cdbtest.NewEmulatorAccount(t, emulator.Options{})
	emu := a.Emulator()
	cfg := a.Config()
	core, logs := observer.New(zapcore.InfoLevel)
	cfg.Logger = zap.New(core)
	// The lock writes of the fetches: with eager dispatch a turn's ack
	// (or an activity's) may create the next item already locked for a
	// waiting fetch, and then no fetch writes the lock the rule faults
	// (work-item-lock failed so, "the rule matched no lock write").
	cfg.DisableEagerDispatch = true
	p := a.NewProvider(t, cfg)
	client := runtime.NewClient(p)
	if f.otherClient {
		client = runtime.NewClient(a.NewProvider(t, cfg))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The orchestration is started first, so that the fault hits the
	// runtime's lock write, not the start's writes.
	const inst = "faulted"
	must(client.StartOrchestration(ctx, inst, "One", "x"))
	if fault != nil {
		r := f.rule(inst)
		r.Fault = *fault
		emu.InjectFault(r)
	}
	reg := runtime.NewRegistry()
	must(
		reg.RegisterActivity("Work", func(ctx *runtime.ActivityContext, in string) (string, error) { return in + "!", nil }),
		reg.RegisterOrchestration("One", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			if f.session {
				return ctx.ScheduleActivityOnSession("Work", in, "s1").Get()
			}
			return ctx.ScheduleActivity("Work", in).Get()
		}))
	opts := options()
	opts.Logger = slog.New(slog.DiscardHandler)
	start := time.Now()
	rt, err := runtime.Start(ctx, p, reg, opts)
	must(err)
	defer func() { _ = rt.Shutdown(context.Background()) }()
	st, err := client.WaitForOrchestration(ctx, inst, time.Minute)
	took := time.Since(start)
	must(err)
	if st.Output != "x!" {
		t.Fatalf("output %q, want %q", st.Output, "x!")
	}
	readBack := logs.FilterMessageSnippet("answer was lost")
	if f.write != "" {
		readBack = readBack.FilterField(zap.String("write", f.write))
	}
	return took, fault == nil || readBack.Len() > 0
}

// TestLockWriteFaultsCostNoStall drops the connection of each lock write
// an orchestration with one activity makes (the work item's lock, the
// instance's lock batch with and without held state, a session claim, a
// container lease claim), once before the write is applied and once after
// (ApplyThenDrop: the write landed, its answer was lost), with change-feed
// wake-ups on: the provider reads the outcome back and goes on with the
// lock, or hands the work back to its candidate pool, so the orchestration
// completes within seconds rather than after the safety rescan (10 s) or
// the lock's expiry (30 s for an activity). The bound is generous, for a
// loaded 2-core machine; the figures are logged (and measured by
// BenchmarkLockWriteFaults).
func TestLockWriteFaultsCostNoStall(t *testing.T) {
	t.Parallel()
	for _, f := range lockWriteFaults {
		for _, fault := range []emulator.Fault{emulator.DropConnection(), emulator.ApplyThenDrop()} {
			t.Run(fmt.Sprintf("%s/%s", f.name, fault.Kind), func(t *testing.T) {
				t.Parallel()
				took, fired := runWithLockWriteFault(t, f, &fault)
				if !fired {
					t.Fatal("no lock write was read back: the rule matched no lock write")
				}
				t.Logf("%s with %s: the orchestration took %v", f.name, fault.Kind, took.Round(time.Millisecond))
				if took > 5*time.Second {
					t.Errorf("one %s on the %s took the orchestration %v, want well under 5s", fault.Kind, f.name, took)
				}
			})
		}
	}
}

// BenchmarkLockWriteFaults measures the figures TestLockWriteFaultsCostNoStall
// bounds: the time from start to completion of an orchestration with one
// activity (ms/orchestration, the mean, and ms-max), with each lock write
// faulted once, and without a fault for comparison. Each iteration runs on
// a fresh emulator, with change-feed wake-ups on:
//
//	go test ./e2e -run '^$' -bench LockWriteFaults -benchtime=10x
func BenchmarkLockWriteFaults(b *testing.B) {
	measure := func(b *testing.B, f lockWriteFault, fault *emulator.Fault) {
		var total, worst time.Duration
		for i := 0; i < b.N; i++ {
			took, fired := runWithLockWriteFault(b, f, fault)
			if !fired {
				b.Fatal("no lock write was read back")
			}
			total, worst = total+took, max(worst, took)
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/orchestration")
		b.ReportMetric(float64(worst.Microseconds())/1000, "ms-max")
	}
	b.Run("no-fault", func(b *testing.B) { measure(b, lockWriteFaults[0], nil) })
	b.Run("no-fault-other-client", func(b *testing.B) { measure(b, lockWriteFaults[2], nil) }) // orchestration-lock-read's baseline
	for _, f := range lockWriteFaults {
		for _, fault := range []emulator.Fault{emulator.DropConnection(), emulator.ApplyThenDrop()} {
			b.Run(fmt.Sprintf("%s/%s", f.name, fault.Kind), func(b *testing.B) { measure(b, f, &fault) })
		}
	}
}
