//go:build darwin

package runtime

import (
	"fmt"

	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/metal"
)

// NewMetal is the Metal backend (runtime/metal) behind the Backend
// interface, on the system's default GPU.
func NewMetal(o metal.Options) (Backend, error) {
	b, err := metal.New(o)
	if err != nil {
		return nil, err
	}
	return &metalBackend{b: b}, nil
}

// DefaultBackend is Metal when this Mac has a Metal device, else the CPU
// backend with threads (0: every core); the string says why.
func DefaultBackend(threads int) (Backend, string) {
	b, err := NewMetal(metal.Options{})
	if err != nil {
		return NewCPU(threads), fmt.Sprintf("cpu (%v)", err)
	}
	return b, "metal (" + b.(*metalBackend).b.Device().Name + ")"
}

// metalBackend adapts runtime/metal. Encode and EncodeCopy record into
// one command buffer (compute encoders, then a blit encoder per copy);
// Commit submits it; WaitOldest waits for the oldest submitted one, so a
// caller that commits chain k+1 before waiting for chain k keeps the GPU
// busy while it reads chain k (double buffering); Wait waits for all.
type metalBackend struct{ b *metal.Backend }

func (m *metalBackend) Name() string                     { return "metal" }
func (m *metalBackend) Alloc(size int) ([]byte, error)   { return m.b.Alloc(size) }
func (m *metalBackend) Wrap(data []byte) ([]byte, error) { return m.b.Wrap(data) }

func (m *metalBackend) Pipeline(p plans.Pipeline) (Pipeline, error) {
	pl, err := m.b.Pipeline(p)
	if err != nil {
		return nil, err
	}
	return pl, nil
}

func (m *metalBackend) Bind(p Pipeline, cmd *plans.Command, bufs [][]byte) (Command, error) {
	pl, ok := p.(*metal.Pipeline)
	if !ok {
		return nil, fmt.Errorf("metal: %s: pipeline %T is not the Metal backend's", cmd.Label, p)
	}
	c, err := m.b.Bind(pl, cmd, bufs)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (m *metalBackend) SetParam(c Command, at, width int, v uint64) {
	c.(*metal.Command).SetParam(at, width, v)
}

func (m *metalBackend) Encode(cmds []Command, steps []plans.Step) {
	m.b.Begin()
	for i, s := range steps {
		m.b.Step(i)
		for _, c := range cmds {
			m.b.Dispatch(c.(*metal.Command), s)
		}
	}
	m.b.End()
}

func (m *metalBackend) EncodeCopy(dst []byte, dstOff int, src []byte, srcOff int, n int) {
	m.b.Copy(dst, dstOff, src, srcOff, n)
}

func (m *metalBackend) Commit()           { m.b.Commit() }
func (m *metalBackend) Wait() error       { return m.b.Wait() }
func (m *metalBackend) WaitOldest() error { return m.b.WaitOldest() }
func (m *metalBackend) Close()            { m.b.Close() }
