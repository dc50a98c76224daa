package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// TestContinueAsNewWindowAcrossTwoProcesses races inputs against
// continue-as-new on Cosmos DB with two providers (two processes' worth:
// each its own client, change-feed reader and runtime) sharing one
// container: queue events, signals, duplicate starts and cancels are sent
// while instances continue as new one input at a time. Every queue event
// and signal must be received exactly once and in order, every duplicate
// start refused or inert, every cancel must end its instance, and no
// instance may be left Running without a successor.
func TestContinueAsNewWindowAcrossTwoProcesses(t *testing.T) {
	t.Parallel()
	const (
		instances = 3 // of each kind
		inputs    = 6 // per instance
	)
	cfg := providerConfig()
	cfg.Leases = cdb.LeasesInProcess // both processes fetch every instance: the most races
	reg := runtime.NewRegistry()
	must(t,
		// Mailbox takes one queue event per execution and carries what it
		// has received in its input: "count|v1,v2,...".
		reg.RegisterOrchestration("Mailbox", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			return receiveOne(ctx, in, inputs, func() (string, error) { return ctx.DequeueEvent("q").Get() })
		}),
		// Signals takes one external event per execution the same way.
		reg.RegisterOrchestration("Signals", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			return receiveOne(ctx, in, inputs, func() (string, error) { return ctx.ScheduleWait("sig").Get() })
		}),
		// Ticker continues as new every 20 ms until it is cancelled.
		reg.RegisterOrchestration("Ticker", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			if _, err := ctx.ScheduleTimer(20 * time.Millisecond).Get(); err != nil {
				return "", err
			}
			n, _ := strconv.Atoi(in)
			return "", ctx.ContinueAsNew(strconv.Itoa(n + 1))
		}))
	opts := options()
	opts.OrchestrationConcurrency = 2
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var clients []*runtime.Client
	for range 2 {
		p := openProvider(t, cfg)
		startRuntime(ctx, t, p, reg, opts)
		clients = append(clients, runtime.NewClient(p))
	}

	var wg sync.WaitGroup
	errs := make(chan error, 3*instances)
	for i := range instances {
		c := clients[i%2]
		other := clients[(i+1)%2]
		mailbox, signals, ticker := fmt.Sprintf("mailbox-%d", i), fmt.Sprintf("signals-%d", i), fmt.Sprintf("ticker-%d", i)
		for _, s := range [][2]string{{mailbox, "Mailbox"}, {signals, "Signals"}, {ticker, "Ticker"}} {
			if err := c.StartOrchestration(ctx, s[0], s[1], "0|"); err != nil {
				t.Fatal(err)
			}
		}
		wg.Add(3)
		go func() { // queue events as fast as they go, with duplicate starts between
			defer wg.Done()
			for k := range inputs {
				if err := other.EnqueueEvent(ctx, mailbox, "q", "m"+strconv.Itoa(k)); err != nil {
					errs <- err
					return
				}
				if err := c.StartOrchestration(ctx, mailbox, "Mailbox", "0|"); !errors.Is(err, runtime.ErrInstanceExists) {
					errs <- fmt.Errorf("duplicate start of %s: %v, want ErrInstanceExists", mailbox, err)
				}
			}
		}()
		go func() { // each signal once the previous one was received: raised in the window
			defer wg.Done()
			for k := range inputs {
				if err := waitCount(ctx, c, signals, k); err != nil {
					errs <- err
					return
				}
				if err := other.RaiseEvent(ctx, signals, "sig", "s"+strconv.Itoa(k)); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() { // a cancel after a few executions
			defer wg.Done()
			time.Sleep(time.Duration(50+30*i) * time.Millisecond)
			if err := other.CancelInstance(ctx, ticker, "stop"); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	for i := range instances {
		for _, s := range []struct{ instance, prefix string }{{fmt.Sprintf("mailbox-%d", i), "m"}, {fmt.Sprintf("signals-%d", i), "s"}} {
			st, err := clients[0].WaitForOrchestration(ctx, s.instance, waitTimeout)
			if err != nil {
				t.Fatalf("%s never finished (left without a successor?): %v", s.instance, err)
			}
			want := make([]string, inputs)
			for k := range want {
				want[k] = s.prefix + strconv.Itoa(k)
			}
			if st.Kind != runtime.StatusCompleted || st.Output != strings.Join(want, ",") {
				t.Errorf("%s: %s %q %v, want every input once, in order: %q", s.instance, st.Kind, st.Output, st.Err(), strings.Join(want, ","))
			}
		}
		ticker := fmt.Sprintf("ticker-%d", i)
		st, err := clients[1].WaitForOrchestration(ctx, ticker, waitTimeout)
		if err != nil {
			t.Fatalf("%s: the cancel never ended it: %v", ticker, err)
		}
		if st.Kind != runtime.StatusFailed || st.Details == nil || st.Details.Application == nil ||
			st.Details.Application.Kind.Name != duroxide.AppErrorCancelled || st.Details.Application.Kind.Reason != "stop" {
			t.Errorf("%s: %s %v, want cancelled with reason stop", ticker, st.Kind, st.Err())
		}
	}
}

// receiveOne is one execution of an orchestration that receives count
// inputs, one per execution: in is "n|v1,v2,..." (what earlier executions
// received); it takes one more input with next and continues as new, or
// returns the list once it has count.
func receiveOne(ctx *runtime.OrchestrationContext, in string, count int, next func() (string, error)) (string, error) {
	n, got, _ := strings.Cut(in, "|")
	k, _ := strconv.Atoi(n)
	v, err := next()
	if err != nil {
		return "", err
	}
	if got != "" {
		got += ","
	}
	got += v
	k++
	ctx.SetCustomStatus(strconv.Itoa(k))
	if k == count {
		return got, nil
	}
	return "", ctx.ContinueAsNew(strconv.Itoa(k) + "|" + got)
}

// waitCount waits until instance's custom status says it received k inputs
// (k = 0: it is running).
func waitCount(ctx context.Context, c *runtime.Client, instance string, k int) error {
	for {
		st, err := c.GetOrchestrationStatus(ctx, instance)
		if err != nil {
			return err
		}
		got := 0
		if st.CustomStatus != nil {
			got, _ = strconv.Atoi(*st.CustomStatus)
		}
		if st.Kind == runtime.StatusRunning && got >= k {
			return nil
		}
		if st.Kind == runtime.StatusCompleted || st.Kind == runtime.StatusFailed {
			return fmt.Errorf("%s ended (%s %v) before it received %d inputs", instance, st.Kind, st.Err(), k)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s never received %d inputs: %w", instance, k, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
