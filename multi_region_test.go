package cdb_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// TestNewRefusesAnAccountWithMultiRegionWrites: the emulator presents an
// account that takes writes in two regions; New refuses it, naming them
// and what to do.
func TestNewRefusesAnAccountWithMultiRegionWrites(t *testing.T) {
	t.Parallel()
	a := cdbtest.NewEmulatorAccount(t, emulator.Options{Regions: []string{"West US", "East US"}, MultipleWriteLocations: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := cdb.New(ctx, a.Config())
	require.Error(t, err)
	assert.True(t, errors.Is(err, cdb.ErrMultiRegionWrites), "%v", err)
	assert.Contains(t, err.Error(), "West US, East US")
	assert.Contains(t, err.Error(), "single write region")
}

// hostCounter counts the requests a transport sends to one host.
type hostCounter struct {
	inner *http.Client
	host  string
	n     atomic.Int64
}

func (h *hostCounter) Do(req *http.Request) (*http.Response, error) {
	if req.URL.Host == h.host && req.Method == http.MethodGet {
		h.n.Add(1)
	}
	return h.inner.Do(req)
}

// TestPreferredReadRegionSecondsBehind: with reads routed to a region 2 s
// behind the write region (azcosmos PreferredRegions), a process still
// reads its own writes (the read region answers 404/1002 to a session
// token it has not reached, and the read goes to the write region) and
// runs orchestrations to completion.
func TestPreferredReadRegionSecondsBehind(t *testing.T) {
	t.Parallel()
	a := cdbtest.NewEmulatorAccount(t, emulator.Options{
		Consistency: emulator.ConsistencySession, ReplicaLag: 20 * time.Millisecond,
		Regions: []string{"West US", "East US"}, RegionLag: 2 * time.Second,
	})
	east, err := a.Emulator().RegionEndpoint("East US")
	require.NoError(t, err)
	u, err := url.Parse(east)
	require.NoError(t, err)
	counter := &hostCounter{inner: a.Emulator().HTTPClient(), host: u.Host}
	cfg := a.Config()
	cfg.DisableReconciler = true
	cfg.ClientOptions = &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: counter}, PreferredRegions: []string{"East US"}}
	p := a.NewProvider(t, cfg)
	ctx := context.Background()

	require.NoError(t, helloWorld(ctx, p, "far-hello", nil))
	history, err := p.Read(ctx, "far-hello")
	require.NoError(t, err)
	assert.NotEmpty(t, history)
	for i := 0; i < 5; i++ {
		inst := "far-" + string(rune('a'+i))
		require.NoError(t, p.EnqueueStart(ctx, duroxide.StartOrchestrationItem{Instance: inst, Orchestration: helloOrch, Version: duroxide.StringPtr(helloVersion), Input: `"world"`, ExecutionID: 1}))
		info, err := p.GetInstanceInfo(ctx, inst)
		require.NoError(t, err, "a start is read back at once")
		assert.Equal(t, duroxide.StatusPending, info.Status)
	}
	assert.Positive(t, counter.n.Load(), "reads went to the preferred region")
}
