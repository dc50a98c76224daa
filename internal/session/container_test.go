package session

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestContainerKeepsRangesApart checks that tokens merge per range and
// container, and that a read is given every range's token.
func TestContainerKeepsRangesApart(t *testing.T) {
	t.Parallel()
	c := NewContainer()
	assert.Empty(t, c.Header("dbs/d/colls/a"))
	c.Record("dbs/d/colls/a", "", "1:1#40")
	c.Record("dbs/d/colls/a", "", "0:1#7")
	c.Record("dbs/d/colls/a", "", "0:1#5") // older: ignored
	c.Record("dbs/d/colls/b", "", "0:1#100")
	assert.Equal(t, "0:1#7,1:1#40", c.Header("dbs/d/colls/a"))
	assert.Equal(t, "0:1#100", c.Header("dbs/d/colls/b"))
	c.Record("dbs/d/colls/a", "", "0:1#9,2:1#3") // a query across ranges; 2 is a child of a split
	assert.Equal(t, "0:1#9,1:1#40,2:1#3", c.Header("dbs/d/colls/a"))
	c.Record("dbs/d/colls/a", "", "not a token")
	assert.Equal(t, "0:1#9,1:1#40,2:1#3", c.Header("dbs/d/colls/a"))
}

// TestContainerStartsAfreshForANewContainer checks that a container
// deleted and created again (a new resource id, or a delete seen) does not
// keep the old container's LSNs, which its replicas would never reach.
func TestContainerStartsAfreshForANewContainer(t *testing.T) {
	t.Parallel()
	c := NewContainer()
	c.Record("dbs/d/colls/a", "rid1", "0:1#500")
	c.Record("dbs/d/colls/a", "", "0:1#501")
	assert.Equal(t, "0:1#501", c.Header("dbs/d/colls/a"))
	c.Record("dbs/d/colls/a", "rid2", "0:1#3")
	assert.Equal(t, "0:1#3", c.Header("dbs/d/colls/a"), "a new resource id forgets the old tokens")
	c.Forget("dbs/d/colls/a")
	assert.Empty(t, c.Header("dbs/d/colls/a"))
	c.Record("dbs/d/colls/a", "", "0:1#3")
	c.Record("dbs/d/colls/b", "", "0:1#3")
	c.Record("dbs/e/colls/a", "", "0:1#3")
	c.Forget("dbs/d/")
	assert.Empty(t, c.Header("dbs/d/colls/a"))
	assert.Empty(t, c.Header("dbs/d/colls/b"))
	assert.Equal(t, "0:1#3", c.Header("dbs/e/colls/a"), "another database keeps its tokens")
}
