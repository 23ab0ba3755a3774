//go:build !darwin

package metal

import "github.com/akunu-dev/akunu/plans"

// Backend is the Metal backend; on this system New always fails, and the
// methods exist only so that code above builds everywhere.
type Backend struct{}

// New returns ErrUnavailable: Metal exists only on macOS.
func New(Options) (*Backend, error) { return nil, ErrUnavailable }

func (*Backend) Name() string                               { return "metal" }
func (*Backend) Device() DeviceInfo                         { return DeviceInfo{} }
func (*Backend) Alloc(int) ([]byte, error)                  { return nil, ErrUnavailable }
func (*Backend) Wrap([]byte) ([]byte, error)                { return nil, ErrUnavailable }
func (*Backend) Pipeline(plans.Pipeline) (*Pipeline, error) { return nil, ErrUnavailable }
func (*Backend) Bind(*Pipeline, *plans.Command, [][]byte) (*Command, error) {
	return nil, ErrUnavailable
}
func (*Backend) Begin()                             {}
func (*Backend) Step(int)                           {}
func (*Backend) Dispatch(*Command, plans.Step)      {}
func (*Backend) End()                               {}
func (*Backend) Copy([]byte, int, []byte, int, int) {}
func (*Backend) Commit()                            {}
func (*Backend) Wait() error                        { return ErrUnavailable }
func (*Backend) WaitOldest() error                  { return ErrUnavailable }
func (*Backend) Close()                             {}
