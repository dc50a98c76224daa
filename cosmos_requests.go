// Requests to the container: partition keys and query parameters, point
// reads, creates, deletes and patches of one document, and cross-partition
// queries.

package cdb

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
)

// Queries. Cross-partition queries go through the gateway, which serves
// only filters and projections (DESIGN.md §10): no ORDER
// BY, TOP, DISTINCT or aggregates there; the provider sorts and counts on
// the client. Single-partition queries are scoped by the partition key.

// pk returns the partition key of an instance.
func pk(instance string) azcosmos.PartitionKey { return azcosmos.NewPartitionKeyString(instance) }

// param builds a query parameter.
func param(name string, v any) azcosmos.QueryParameter {
	return azcosmos.QueryParameter{Name: name, Value: v}
}

// slotFilter returns " AND c.dispatchSlot IN (...)" for a lease, or "" when
// the lease holds every slot (DESIGN.md §10).
func slotFilter(l *SlotLease) string {
	if l == nil || l.All || len(l.Slots) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(" AND c.dispatchSlot IN (")
	for i, s := range l.Slots {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(s)))
	}
	b.WriteByte(')')
	return b.String()
}

// tagFilterClause returns the worker-queue condition for a TagFilter (the
// SQLite provider's build_tag_clause) and its parameters; ok is false for
// TagFilterNone, which matches nothing.
func tagFilterClause(f duroxide.TagFilter) (clause string, params []azcosmos.QueryParameter, ok bool) {
	tags := f.Tags()
	in := func() string {
		names := make([]string, len(tags))
		for i, t := range tags {
			names[i] = "@tag" + strconv.Itoa(i)
			params = append(params, param(names[i], t))
		}
		return "c.tag IN (" + strings.Join(names, ",") + ")"
	}
	switch f.Mode() {
	case duroxide.TagFilterModeNone:
		return "", nil, false
	case duroxide.TagFilterModeAny:
		return "", nil, true
	case duroxide.TagFilterModeTags:
		return " AND " + in(), params, true
	case duroxide.TagFilterModeDefaultAnd:
		return " AND (IS_NULL(c.tag) OR " + in() + ")", params, true
	default:
		return " AND IS_NULL(c.tag)", nil, true
	}
}

// readDoc point-reads document id of instance into v. found is false on 404.
func (p *Provider) readDoc(ctx context.Context, instance, id string, v any) (etag string, found bool, err error) {
	var raw []byte
	err = p.retry.do(ctx, readRequest, func(ctx context.Context) error {
		resp, err := p.container.ReadItem(ctx, pk(instance), id, nil)
		if err != nil {
			return err
		}
		raw = resp.Value
		return nil
	})
	if cosmos.IsStatus(err, http.StatusNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	etag, err = decodeDoc(raw, v)
	return etag, err == nil, err
}

// loadInstance validates instance and point-reads its instance document
// (created or pending); it returns nil, and no error, when there is none.
func (p *Provider) loadInstance(ctx context.Context, op, instance string) (*instanceDoc, error) {
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	var doc instanceDoc
	etag, found, err := p.readDoc(ctx, instance, instanceDocID, &doc)
	if err != nil {
		return nil, mapError(op, err)
	}
	if !found {
		return nil, nil
	}
	doc.ETag = etag
	return &doc, nil
}

// requireInstance is loadInstance for an instance an ack created: a
// missing or pending one is a permanent "not found" error.
func (p *Provider) requireInstance(ctx context.Context, op, instance string) (*instanceDoc, error) {
	doc, err := p.loadInstance(ctx, op, instance)
	if err == nil && !doc.exists() {
		err = permanent(op, fmt.Sprintf("Instance %s not found", instance))
	}
	return doc, err
}

// queryOpts are the options of one query.
type queryOpts struct {
	// maxPages stops after this many non-empty pages (0: all).
	maxPages int
	// pageSize is the page size hint (0: the service's default, 100
	// documents; -1: as many as fit in the service's 4 MB page).
	pageSize int32
}

// query runs a query, single-partition when instance is non-nil and
// cross-partition otherwise, and returns the raw documents of every page.
// Each page is one request, retried on its own.
func (p *Provider) query(ctx context.Context, instance *string, q string, params []azcosmos.QueryParameter, o queryOpts) ([][]byte, error) {
	key := azcosmos.NewPartitionKey()
	if instance != nil {
		key = pk(*instance)
	}
	var out [][]byte
	var cont *string
	pages := 0
	for {
		opts := azcosmos.QueryOptions{QueryParameters: params, ContinuationToken: cont, PageSizeHint: o.pageSize}
		var page azcosmos.QueryItemsResponse
		err := p.retry.do(ctx, readRequest, func(ctx context.Context) error {
			pager := p.container.NewQueryItemsPager(q, key, &opts)
			var err error
			page, err = pager.NextPage(ctx)
			return err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if len(page.Items) > 0 {
			pages++
		}
		if page.ContinuationToken == nil || *page.ContinuationToken == "" || (o.maxPages > 0 && pages >= o.maxPages) {
			return out, nil
		}
		cont = page.ContinuationToken
	}
}

// createDoc creates a document; kind says whether a lost answer may be
// retried (a create whose 409 the caller accepts is idempotent).
func (p *Provider) createDoc(ctx context.Context, instance string, body []byte, kind requestKind) error {
	return p.retry.do(ctx, kind, func(ctx context.Context) error {
		_, err := p.container.CreateItem(ctx, pk(instance), body, nil)
		return err
	})
}

// deleteDoc deletes a document, with If-Match when etag is non-empty.
func (p *Provider) deleteDoc(ctx context.Context, instance, id, etag string) error {
	var opts *azcosmos.ItemOptions
	if etag != "" {
		e := azcore.ETag(etag)
		opts = &azcosmos.ItemOptions{IfMatchEtag: &e}
	}
	return p.retry.do(ctx, idempotentWrite, func(ctx context.Context) error {
		_, err := p.container.DeleteItem(ctx, pk(instance), id, opts)
		return err
	})
}

// patchDoc applies a patch (whose filter predicate, if any, is in ops) and
// returns the document's new ETag.
func (p *Provider) patchDoc(ctx context.Context, instance, id string, ops azcosmos.PatchOperations, kind requestKind) (string, error) {
	var etag string
	err := p.retry.do(ctx, kind, func(ctx context.Context) error {
		resp, err := p.container.PatchItem(ctx, pk(instance), id, ops, nil)
		if err != nil {
			return err
		}
		etag = string(resp.ETag)
		return nil
	})
	return etag, err
}

// strp returns a pointer to s.
func strp(s string) *string { return &s }
