package shop

import (
	"context"
	"sync"
)

// Pool is a bounded pool of worker goroutines shared by all requests of a
// process: a task waits (in the order tasks arrived) until a worker is
// free, like a call waiting for a connection of a connection pool.
type Pool struct {
	tasks chan func()
	wg    sync.WaitGroup
}

// NewPool starts size workers (at least one).
func NewPool(size int) *Pool {
	p := &Pool{tasks: make(chan func())}
	for range max(size, 1) {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for f := range p.tasks {
				f()
			}
		}()
	}
	return p
}

// Run runs the functions on the pool's workers and returns when all have
// ended, or ctx.Err() when ctx ends before every function found a worker
// (the functions already started still end before Run returns).
func (p *Pool) Run(ctx context.Context, fns []func()) error {
	var wg sync.WaitGroup
	var err error
	for _, f := range fns {
		wg.Add(1)
		select {
		case p.tasks <- func() { defer wg.Done(); f() }:
		case <-ctx.Done():
			wg.Done()
			err = ctx.Err()
		}
		if err != nil {
			break
		}
	}
	wg.Wait()
	return err
}

// Close stops the workers once the tasks given to them have ended. No Run
// may be called after Close.
func (p *Pool) Close() {
	close(p.tasks)
	p.wg.Wait()
}
