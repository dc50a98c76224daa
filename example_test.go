package cdb_test

import (
	"context"
	"fmt"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// Open the provider on the embedded emulator (on an account:
// cdb.ConfigFromEnv() with COSMOS_ENDPOINT and COSMOS_KEY), store a start
// as a client does, and list it as the dashboard does. A runtime
// (runtime.Start over the provider) would then run it: see the package
// documentation and examples/hello_world.
func Example() {
	srv, err := emulator.Start(emulator.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	ctx := context.Background()
	p, err := cdb.New(ctx, cdb.Config{Endpoint: srv.Endpoint(), Key: srv.Key(), HTTPClient: srv.HTTPClient()})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	start := duroxide.StartOrchestrationItem{Instance: "order-1", Orchestration: "ProcessOrder", Input: `{"total":42}`, ExecutionID: duroxide.InitialExecutionID}
	if err := p.EnqueueStart(ctx, start); err != nil {
		panic(err)
	}
	page, err := p.ListInstancesPage(ctx, duroxide.InstancePageQuery{Order: duroxide.OrderNewestFirst})
	if err != nil {
		panic(err)
	}
	for _, s := range page.Instances {
		fmt.Println(s.InstanceID, s.OrchestrationName, s.Status)
	}
	fmt.Println(page.StatusCounts)
	// Output:
	// order-1 ProcessOrder Pending
	// map[Pending:1]
}
