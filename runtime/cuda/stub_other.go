//go:build !linux

package cuda

import (
	"fmt"
	"runtime"
	"time"

	"github.com/akunu-dev/akunu/plans"
	"github.com/akunu-dev/akunu/runtime/device"
)

// Backend exists only on Linux, where the CUDA driver does; New fails
// elsewhere with ErrUnavailable.
type Backend struct{}

// Options configure the backend (see the Linux build).
type Options struct {
	Device          int
	CacheDir        string
	SyncEachCommand bool
	NoGraphs        bool
	DecodeRows      int
	SplitRows       int
}

// Device describes the GPU.
type Device struct {
	Name         string
	Major, Minor int
	SMs          int
	Memory       int64
	Driver       int
	NVRTC        string
}

// Available is false: no CUDA on this system.
func Available() bool { return false }

// New fails: no CUDA on this system.
func New(Options) (*Backend, error) {
	return nil, fmt.Errorf("%w: CUDA runs on Linux, this is %s", ErrUnavailable, runtime.GOOS)
}

func (*Backend) Name() string                           { return "cuda" }
func (*Backend) DecodeRows(*plans.Plan) int             { return 1 }
func (*Backend) SplitRows(*plans.Plan) int              { return 0 }
func (*Backend) Device() Device                         { return Device{} }
func (*Backend) Uploaded() (int64, time.Duration)       { return 0, 0 }
func (*Backend) Alloc(int) (device.Buffer, error)       { return device.Buffer{}, ErrUnavailable }
func (*Backend) Map([]byte) (device.Buffer, error)      { return device.Buffer{}, ErrUnavailable }
func (*Backend) Free(device.Buffer)                     {}
func (*Backend) Unbind(device.Program)                  {}
func (*Backend) Write(device.Buffer, int, []byte) error { return ErrUnavailable }
func (*Backend) Read([]byte, device.Buffer, int) error  { return ErrUnavailable }
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
func (*Backend) Derive(string, []device.Buffer, int, int) (device.Buffer, error) {
	return device.Buffer{}, ErrUnavailable
}
