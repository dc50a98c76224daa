package emulator_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// newClient returns an azcosmos client for srv: signed with its key, sent
// through its HTTP client (which trusts its certificate when it serves TLS),
// with the SDK's own retries off so the examples see every answer.
func newClient(srv *emulator.Server) *azcosmos.Client {
	cred, err := azcosmos.NewKeyCredential(srv.Key())
	if err != nil {
		panic(err)
	}
	client, err := azcosmos.NewClientWithKey(srv.Endpoint(), cred, &azcosmos.ClientOptions{
		ClientOptions: azcore.ClientOptions{Transport: srv.HTTPClient(), Retry: policy.RetryOptions{MaxRetries: -1}},
	})
	if err != nil {
		panic(err)
	}
	return client
}

// Start an emulator, point the azcosmos SDK at it, and close it at the end,
// as with net/http/httptest.
func Example() {
	srv, err := emulator.Start(emulator.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	ctx := context.Background()
	client := newClient(srv)
	if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "shop"}, nil); err != nil {
		panic(err)
	}
	db, _ := client.NewDatabase("shop")
	props := azcosmos.ContainerProperties{ID: "orders", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/customer"}}}
	if _, err := db.CreateContainer(ctx, props, nil); err != nil {
		panic(err)
	}
	orders, _ := db.NewContainer("orders")
	pk := azcosmos.NewPartitionKeyString("alice")
	created, err := orders.CreateItem(ctx, pk, []byte(`{"id":"o-1","customer":"alice","total":42}`), nil)
	if err != nil {
		panic(err)
	}
	// The write's session token makes the read see it, whatever replica
	// serves it (Options.Consistency, Options.ReplicaLag).
	item, err := orders.ReadItem(ctx, pk, "o-1", &azcosmos.ItemOptions{SessionToken: created.SessionToken})
	if err != nil {
		panic(err)
	}
	fmt.Println(item.RawResponse.StatusCode, item.ETag != "")
	// Output: 200 true
}

// Inject a fault: the next point read is throttled with 429 and a retry
// hint; the one after it is served.
func ExampleServer_InjectFault() {
	srv, _ := emulator.Start(emulator.Options{})
	defer srv.Close()
	ctx := context.Background()
	client := newClient(srv)
	_, _ = client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil)
	db, _ := client.NewDatabase("db")
	_, _ = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	c, _ := db.NewContainer("c")
	pk := azcosmos.NewPartitionKeyString("p")
	created, _ := c.CreateItem(ctx, pk, []byte(`{"id":"a","pk":"p"}`), nil)
	session := &azcosmos.ItemOptions{SessionToken: created.SessionToken}

	remove := srv.InjectFault(emulator.FaultRule{Op: emulator.OpReadItem, Times: 1, Fault: emulator.TooManyRequests(50 * time.Millisecond)})
	defer remove()
	_, err := c.ReadItem(ctx, pk, "a", session)
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		fmt.Println(re.StatusCode == http.StatusTooManyRequests, re.RawResponse.Header.Get("x-ms-retry-after-ms"))
	}
	_, err = c.ReadItem(ctx, pk, "a", session)
	fmt.Println(err == nil)
	// Output:
	// true 50
	// true
}

// Count requests per operation kind, for instance to check how many a code
// path costs. Reset data between tests with Reset, counters with
// ResetCounters.
func ExampleServer_Counters() {
	srv, _ := emulator.Start(emulator.Options{})
	defer srv.Close()
	ctx := context.Background()
	client := newClient(srv)
	_, _ = client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil)
	db, _ := client.NewDatabase("db")
	_, _ = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	c, _ := db.NewContainer("c")
	pk := azcosmos.NewPartitionKeyString("p")

	srv.ResetCounters()
	for _, id := range []string{"a", "b", "c"} {
		_, _ = c.UpsertItem(ctx, pk, []byte(`{"id":"`+id+`","pk":"p"}`), nil)
	}
	upserts := srv.Counters()[emulator.OpUpsertItem]
	fmt.Println(upserts.Requests, upserts.RequestCharge > 0)

	srv.Reset() // every database gone; counters kept
	_, err := db.Read(ctx, nil)
	fmt.Println(err != nil)
	// Output:
	// 3 true
	// true
}
