package e2e_test

import (
	"context"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

func dumpPartition(t *testing.T, p duroxide.Provider, instance string) {
	cp, ok := p.(*cdb.Provider)
	if !ok {
		return
	}
	pager := cp.Container().NewQueryItemsPager("SELECT * FROM c", azcosmos.NewPartitionKeyString(instance), nil)
	for pager.More() {
		r, err := pager.NextPage(context.Background())
		if err != nil {
			t.Log(err)
			return
		}
		for _, it := range r.Items {
			t.Logf("DOC %s", it)
		}
	}
}
