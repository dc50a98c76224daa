package e2e_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// lockWriteFault is one lock write of an orchestration with one activity,
// matched by a fault rule on a private emulator.
type lockWriteFault struct {
	name string
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
	{name: "work-item-lock", rule: func(inst string) emulator.FaultRule {
		return emulator.FaultRule{Op: emulator.OpPatchItem, PartitionKey: &inst, Times: 1}
	}},
	{name: "orchestration-lock-held", rule: func(inst string) emulator.FaultRule {
		return emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &inst, ItemID: ptr("instance"), Times: 1}
	}},
	{name: "orchestration-lock-read", otherClient: true, rule: func(inst string) emulator.FaultRule {
		return emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &inst, ItemID: ptr("instance"), Times: 1}
	}},
	{name: "session-claim", session: true, rule: func(inst string) emulator.FaultRule {
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
// returns how long the orchestration took from its start to its
// completion and whether the fault fired.
func runWithLockWriteFault(t *testing.T, f lockWriteFault, fault *emulator.Fault) (time.Duration, bool) {
	t.Helper()
	a := cdbtest.NewEmulatorAccount(t, emulator.Options{})
	emu := a.Emulator()
	cfg := a.Config()
	var dropped atomic.Int64 // requests whose connection dropped
	cfg.ClientOptions = &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: transportFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := emu.HTTPClient().Do(req)
		if err != nil {
			dropped.Add(1)
		}
		return resp, err
	})}}
	p := a.NewProvider(t, cfg)
	client := runtime.NewClient(p)
	if f.otherClient {
		client = runtime.NewClient(a.NewProvider(t, cfg))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const inst = "faulted"
	if fault != nil {
		r := f.rule(inst)
		r.Fault = *fault
		emu.InjectFault(r)
	}
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("Work", func(ctx *runtime.ActivityContext, in string) (string, error) { return in + "!", nil }),
		reg.RegisterOrchestration("One", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			if f.session {
				return ctx.ScheduleActivityOnSession("Work", in, "s1").Get()
			}
			return ctx.ScheduleActivity("Work", in).Get()
		}))
	opts := options()
	rt, err := runtime.Start(ctx, p, reg, opts)
	must(t, err)
	defer func() { _ = rt.Shutdown(context.Background()) }()

	start := time.Now()
	must(t, client.StartOrchestration(ctx, inst, "One", "x"))
	st, err := client.WaitForOrchestration(ctx, inst, time.Minute)
	took := time.Since(start)
	must(t, err)
	wantEqual(t, "output", st.Output, "x!")
	return took, dropped.Load() > 0
}

// transportFunc is an azcore transport (policy.Transporter) made of a
// function.
type transportFunc func(*http.Request) (*http.Response, error)

func (f transportFunc) Do(req *http.Request) (*http.Response, error) { return f(req) }

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
					t.Fatal("the fault never fired: the rule matches no lock write")
				}
				t.Logf("%s with %s: the orchestration took %v", f.name, fault.Kind, took.Round(time.Millisecond))
				if took > 5*time.Second {
					t.Errorf("one %s on the %s took the orchestration %v, want well under 5s", fault.Kind, f.name, took)
				}
			})
		}
	}
}
