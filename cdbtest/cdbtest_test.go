package cdbtest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// recordingT is a cdbtest.TB whose Fatalf records instead of stopping, so
// tests can check what a helper reports.
type recordingT struct {
	fatal    []string
	cleanups []func()
}

func (*recordingT) Helper() {}
func (r *recordingT) Fatalf(format string, a ...any) {
	r.fatal = append(r.fatal, fmt.Sprintf(format, a...))
}
func (r *recordingT) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recordingT) finish() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestNewProviderServesTheProviderContract(t *testing.T) {
	t.Parallel()
	p := cdbtest.NewProvider(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := runtime.Start(ctx, p, greeter(), runtime.Options{PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
	c := runtime.NewClient(p)
	require.NoError(t, c.StartOrchestration(ctx, "i-1", "HelloWorld", "kit"))
	st, err := c.WaitForOrchestration(ctx, "i-1", 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, runtime.StatusCompleted, st.Kind)
	require.Equal(t, "Hello, kit!", st.Output)
	ids, err := p.ListInstances(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"i-1"}, ids)
}

func TestNewProviderGivesEachCallAFreshContainer(t *testing.T) {
	t.Parallel()
	a := cdbtest.NewAccount(t)
	p1 := cdbtest.NewProvider(t, cdbtest.OnAccount(a))
	p2 := cdbtest.NewProvider(t, cdbtest.OnAccount(a))
	require.NotEqual(t, p1.Container().ID(), p2.Container().ID())
	require.Equal(t, a.Database(), cdbtest.DefaultDatabase)
}

func TestWithConfigChangesTheConfigurationInOrder(t *testing.T) {
	t.Parallel()
	var seen []string
	p := cdbtest.NewProvider(t,
		cdbtest.WithConfig(func(c *cdb.Config) { seen = append(seen, c.Container); c.Container = "mine" }),
		cdbtest.WithConfig(func(c *cdb.Config) { seen = append(seen, c.Container) }),
	)
	require.Equal(t, "mine", p.Container().ID())
	require.Len(t, seen, 2)
	require.Equal(t, "mine", seen[1])
}

func TestCleanupClosesTheProviderAndStopsTheEmulator(t *testing.T) {
	t.Parallel()
	rt := &recordingT{}
	a := cdbtest.NewAccount(rt)
	p := a.NewProvider(rt, a.Config())
	require.Empty(t, rt.fatal)
	rt.finish()
	_, err := p.ListInstances(context.Background())
	require.Error(t, err, "a provider used after its test ended")
	resp, err := a.Emulator().HTTPClient().Get(a.Endpoint())
	if err == nil {
		_ = resp.Body.Close()
	}
	require.Error(t, err, "the emulator no longer answers once the account is closed")
}

func TestNewProviderReportsAnInvalidConfig(t *testing.T) {
	t.Parallel()
	rt := &recordingT{}
	defer rt.finish()
	p := cdbtest.NewProvider(rt, cdbtest.WithConfig(func(c *cdb.Config) { c.OrchestrationLanes = -1 }))
	require.Nil(t, p)
	require.Len(t, rt.fatal, 1)
	require.Contains(t, rt.fatal[0], "open the provider")
}

func TestAccountExposesTheEmulatorsCountersAndFaults(t *testing.T) {
	t.Parallel()
	a := cdbtest.NewAccount(t)
	emu := a.Emulator()
	if emu == nil {
		t.Skip("COSMOS_ENDPOINT names a real account: no emulator to count or fault")
	}
	p := a.NewProvider(t, a.Config())
	emu.ResetCounters()
	remove := emu.InjectFault(emulator.FaultRule{Op: emulator.OpQuery, Times: 1, Fault: emulator.ServiceUnavailable()})
	defer remove()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := p.ListInstances(ctx)
	require.NoError(t, err, "the provider retries past one 503")
	require.GreaterOrEqual(t, emu.Counters()[emulator.OpQuery].Requests, int64(2), "the refused query and its retry")
}

func TestOpenRefusesAnEndpointWithoutKey(t *testing.T) {
	t.Setenv(cdb.EnvEndpoint, "https://example.invalid:443/")
	t.Setenv(cdb.EnvKey, "")
	_, err := cdbtest.Open()
	require.ErrorContains(t, err, cdb.EnvKey)
}

func TestClientReachesTheAccount(t *testing.T) {
	t.Parallel()
	a := cdbtest.NewAccount(t)
	c, err := a.Client()
	require.NoError(t, err)
	_, err = c.CreateDatabase(context.Background(), azcosmos.DatabaseProperties{ID: "client-db"}, nil)
	require.NoError(t, err)
}

func TestEmulatorAccountTakesTheEmulatorsOptionsWhateverTheEnvironment(t *testing.T) {
	t.Setenv(cdb.EnvEndpoint, "https://an-account.documents.azure.com:443/")
	t.Setenv(cdb.EnvKey, "a2V5")
	a := cdbtest.NewEmulatorAccount(t, emulator.Options{PhysicalPartitions: 3})
	require.NotNil(t, a.Emulator(), "an emulator account ignores COSMOS_ENDPOINT")
	p := a.NewProvider(t, a.Config())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ranges, err := p.Container().ReadFeedRanges(ctx, nil)
	require.NoError(t, err)
	require.Len(t, ranges, 3, "the emulator was started with 3 physical partitions")

	rt := &recordingT{}
	require.Nil(t, cdbtest.NewEmulatorAccount(rt, emulator.Options{Key: "not base64!"}))
	require.Len(t, rt.fatal, 1, "an invalid option fails the test")
	require.Contains(t, rt.fatal[0], "cdbtest: start the embedded emulator")
}
