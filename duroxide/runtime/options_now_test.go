package runtime

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

func TestOptionsNowIsTheClockOfTimersUtcNowAndEventTimestamps(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return at }
	p := memory.NewMemoryProvider(memory.MemoryOptions{Now: clock})
	reg := NewRegistry()
	if err := reg.RegisterOrchestration("Clocked", func(ctx *OrchestrationContext, _ string) (string, error) {
		now := ctx.UtcNow()
		if _, err := ctx.ScheduleTimer(0).Get(); err != nil {
			return "", err
		}
		return strconv.FormatInt(now.UnixMilli(), 10), nil
	}); err != nil {
		t.Fatal(err)
	}
	rt, err := Start(t.Context(), p, reg, Options{PollInterval: 5 * time.Millisecond, LongPollTimeout: -1, Now: clock, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rt.Shutdown(context.Background()) }()
	client := NewClient(p)
	if err := client.StartOrchestration(t.Context(), "c", "Clocked", ""); err != nil {
		t.Fatal(err)
	}
	st, err := client.WaitForOrchestration(t.Context(), "c", 30*time.Second)
	ms := uint64(at.UnixMilli())
	if err != nil || st.Output != strconv.FormatUint(ms, 10) {
		t.Fatalf("%v %+v, want output %d", err, st, ms)
	}
	events, err := p.Read(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if k, ok := ev.Kind.(duroxide.TimerCreated); ok && k.FireAtMs != ms {
			t.Errorf("timer fires at %d, want %d", k.FireAtMs, ms)
		}
		if _, started := ev.Kind.(duroxide.OrchestrationStarted); !started && !ev.IsTerminal() && ev.TimestampMs != ms {
			t.Errorf("%s stamped %d, want %d", ev.Type(), ev.TimestampMs, ms)
		}
	}
}
