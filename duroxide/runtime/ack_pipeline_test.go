package runtime

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAckPipelineRunsOneAckAtATimeInOrder(t *testing.T) {
	t.Parallel()
	r := &Runtime{}
	p := newAckPipeline()
	release := make(chan struct{})
	firstStarted := make(chan struct{})
	var order []int
	var running atomic.Int32
	p.run(r, func() {
		close(firstStarted)
		running.Add(1)
		<-release
		order = append(order, 1)
		running.Add(-1)
	})
	<-firstStarted
	secondQueued := make(chan struct{})
	go func() {
		p.run(r, func() {
			assert.Zero(t, running.Load(), "the second ack starts only after the first finished")
			order = append(order, 2)
		})
		close(secondQueued)
	}()
	close(release)
	<-secondQueued
	p.close()
	r.wg.Wait()
	require.Equal(t, []int{1, 2}, order)
}

func TestAckPipelineCloseEndsItsGoroutineAfterTheRunningAck(t *testing.T) {
	t.Parallel()
	r := &Runtime{}
	p := newAckPipeline()
	p.close() // before any run: nothing started, nothing to end
	release := make(chan struct{})
	var finished atomic.Bool
	p.run(r, func() {
		<-release
		finished.Store(true)
	})
	p.close()
	ended := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(ended)
	}()
	select {
	case <-ended:
		t.Fatal("the pipeline's goroutine ended before its ack finished")
	default:
	}
	close(release)
	<-ended
	require.True(t, finished.Load(), "the ack ran to its end before the goroutine ended")
}
