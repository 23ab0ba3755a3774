package cpu

import (
	"errors"
	"fmt"
)

// ErrFault: a kernel faulted reading its memory. The weights are the mapped
// model file's pages; when the file shrinks under the mapping (or its
// storage fails), touching a lost page raises SIGBUS, which would end the
// process. Every goroutine that runs kernels sets debug.SetPanicOnFault, so
// the fault is a panic instead; catch recovers it on the goroutine it hit
// and records it, the run goes on (its outputs are garbage), and the next
// Wait reports it: the command ends with an error, not a crash.
var ErrFault = errors.New("memory fault")

// catch, deferred by each goroutine that runs kernels, records a memory
// fault; any other panic goes on (a bug is not the file's fault).
func (p *pool) catch() {
	r := recover()
	if r == nil {
		return
	}
	f, ok := r.(interface{ Addr() uintptr })
	if !ok {
		panic(r)
	}
	if p.faulted.CompareAndSwap(false, true) {
		p.faultAddr.Store(f.Addr())
	}
}

// takeFault reports (and clears) a recorded fault.
func (p *pool) takeFault() error {
	if !p.faulted.Load() {
		return nil
	}
	addr := p.faultAddr.Load()
	p.faulted.Store(false)
	return fmt.Errorf("cpu: a kernel faulted reading address %#x: the mapped model file shrank or its storage failed (check the file and reload): %w", addr, ErrFault)
}
