// Infrastructure: the container's indexing policy and creating the database
// and container at New when asked.

package cdb

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// indexingPolicy is the container's indexing policy: duroxide-cdb's spec §2.3
// (selective included paths, large blobs excluded, the three composite
// indexes) plus the paths the provider's own queries filter on
// (duroxide-cdb's architecture notes §2.3 adds /docType and /lockToken).
func indexingPolicy() *azcosmos.IndexingPolicy {
	included := []string{
		"/type/?", "/instanceId/?", "/dispatchSlot/?", "/visibleAt/?", "/enqueuedAt/?",
		"/lockedUntil/?", "/executionId/?", "/eventId/?", "/status/?", "/sessionId/?",
		"/ownerId/?", "/parentInstanceId/?", "/createdAt/?", "/customStatusVersion/?",
		"/lockToken/?", "/tag/?", "/lastActivity/?", "/updatedAt/?",
	}
	excluded := []string{"/eventData/*", "/workItem/*", "/payload/*", "/output/*", "/customStatus/*", "/deliveries/*", "/entries/*", "/*"}
	pol := &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent}
	for _, p := range included {
		pol.IncludedPaths = append(pol.IncludedPaths, azcosmos.IncludedPath{Path: p})
	}
	for _, p := range excluded {
		pol.ExcludedPaths = append(pol.ExcludedPaths, azcosmos.ExcludedPath{Path: p})
	}
	asc := func(path string) azcosmos.CompositeIndex {
		return azcosmos.CompositeIndex{Path: path, Order: azcosmos.CompositeIndexAscending}
	}
	pol.CompositeIndexes = [][]azcosmos.CompositeIndex{
		{asc("/type"), asc("/dispatchSlot"), asc("/visibleAt"), asc("/enqueuedAt")},
		{asc("/type"), asc("/executionId"), asc("/eventId")},
		{asc("/type"), asc("/status")},
	}
	return pol
}

// ensureInfrastructure creates the database and the container when they are
// missing (duroxide-cdb's architecture notes §12).
func (p *Provider) ensureInfrastructure(ctx context.Context) error {
	err := p.withMetadataRetry(ctx, func() error {
		_, err := p.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: p.cfg.Database}, nil)
		if isStatus(err, http.StatusConflict) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("cdb: create database %q: %w", p.cfg.Database, mapError("new", err))
	}
	db, err := p.client.NewDatabase(p.cfg.Database)
	if err != nil {
		return fmt.Errorf("cdb: database client: %w", err)
	}
	ttlOn := int32(-1)
	props := azcosmos.ContainerProperties{
		ID: p.cfg.Container,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{
			Kind: azcosmos.PartitionKeyKindHash, Paths: []string{"/instanceId"}, Version: 2,
		},
		IndexingPolicy: indexingPolicy(),
		// -1: per-item time to live on, with no default expiry, so that
		// only the tombstones of consumed messages expire (queue_documents.go).
		DefaultTimeToLive: &ttlOn,
	}
	err = p.withMetadataRetry(ctx, func() error {
		_, err := db.CreateContainer(ctx, props, nil)
		if isStatus(err, http.StatusConflict) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("cdb: create container %q: %w", p.cfg.Container, mapError("new", err))
	}
	return nil
}

// withMetadataRetry runs a database or container creation, retrying 429
// (metadata throttling) and other transient failures with exponential
// backoff from 500 ms, at most 10 times (duroxide-cdb's architecture notes §9.2).
func (p *Provider) withMetadataRetry(ctx context.Context, fn func() error) error {
	delay := 500 * time.Millisecond
	var err error
	for attempt := 0; attempt <= 10; attempt++ {
		err = fn()
		if err == nil {
			return nil
		}
		code, isResp := statusCode(err)
		if (isResp && !isRetryableStatus(code)) || ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return err
		}
		if attempt == 10 {
			break
		}
		wait := delay
		if ra := retryAfter(err); ra > wait {
			wait = ra
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		delay *= 2
	}
	return err
}
