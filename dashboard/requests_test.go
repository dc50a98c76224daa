package dashboard_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/dashboard"
)

// TestCosmosRequestsPerPageView counts the Cosmos DB requests of one view
// of each page on cdb (the quiet provider's Usage, which nothing else
// moves), the numbers the package documentation gives: the list through
// cdb's paged listing, and through the id listing of an admin without one.
func TestCosmosRequestsPerPageView(t *testing.T) {
	s := newSite(t, dashboard.Options{PageSize: 5})
	p := shared(t).quiet
	for _, c := range []struct {
		name, path string
		want       int64
	}{
		{"list, any status, a page of 5", "/dash/", 1},
		{"list, one status", "/dash/?status=Completed", 1},
		{"list, filtered by status, name, prefix and time", "/dash/?status=Completed&name=hello&prefix=h&after=2000-01-01", 1},
		{"instance, one execution, no child", instancePath(helloID), 1 + 1 + 0 + 1 + 1 + 1},
		{"instance, three executions", instancePath(eternalID), 1 + 1 + 2 + 1 + 1 + 1},
		{"instance, one child", instancePath(parentID), 1 + 1 + 0 + 1 + 1 + 1 + 1},
		{"tree of three", "/dash/tree?id=" + url.QueryEscape(leafID), 3 + 3 + 3},
		{"queues, one Pending instance", "/dash/queues", 1 + 1 + 1},
		{"health", "/dash/health", 1},
	} {
		before := p.Usage().Requests
		code, _ := s.get(c.path)
		require.Equal(t, http.StatusOK, code, c.name)
		assert.Equal(t, c.want, p.Usage().Requests-before, c.name)
	}

	ids := newSite(t, dashboard.Options{Admin: idsOnly{p}, PageSize: 5})
	for _, c := range []struct {
		name, path string
		want       int64
	}{
		{"list without a pager, any status, a page of 5", "/dash/", 2 + 5},
		{"list without a pager, one status", "/dash/?status=Completed", 1 + 5},
	} {
		before := p.Usage().Requests
		code, _ := ids.get(c.path)
		require.Equal(t, http.StatusOK, code, c.name)
		assert.Equal(t, c.want, p.Usage().Requests-before, c.name)
	}
}
