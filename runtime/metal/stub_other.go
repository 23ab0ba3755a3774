//go:build !darwin

package metal

import (
	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
)

// Backend is the Metal backend; on this system New always fails, and the
// methods exist only so that code above builds everywhere with the method
// set of the darwin backend (runtime.Backend's, and Device).
type Backend struct{}

// New returns ErrUnavailable: Metal exists only on macOS.
func New(Options) (*Backend, error) { return nil, ErrUnavailable }

func (*Backend) Name() string                           { return "metal" }
func (*Backend) Device() DeviceInfo                     { return DeviceInfo{} }
func (*Backend) Alloc(int) (device.Buffer, error)       { return device.Buffer{}, ErrUnavailable }
func (*Backend) Map([]byte) (device.Buffer, error)      { return device.Buffer{}, ErrUnavailable }
func (*Backend) Free(device.Buffer)                     {}
func (*Backend) Unbind(device.Program)                  {}
func (*Backend) Write(device.Buffer, int, []byte) error { return ErrUnavailable }
func (*Backend) Read([]byte, device.Buffer, int) error  { return ErrUnavailable }
func (*Backend) Derive(string, []device.Buffer, int, int) (device.Buffer, error) {
	return device.Buffer{}, ErrUnavailable
}
func (*Backend) Bind([]device.Command) (device.Program, error) {
	return device.Program{}, ErrUnavailable
}
func (*Backend) SetParam(device.Program, int, int, int, uint64)   {}
func (*Backend) Encode(device.Program, []plans.Step)              {}
func (*Backend) Copy(device.Buffer, int, device.Buffer, int, int) {}
func (*Backend) Commit()                                          {}
func (*Backend) Wait() error                                      { return ErrUnavailable }
func (*Backend) WaitOldest() error                                { return ErrUnavailable }
func (*Backend) Close()                                           {}
