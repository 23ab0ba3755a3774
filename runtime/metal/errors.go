package metal

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

var (
	// ErrUnavailable: no Metal here (not macOS, or no Metal device).
	ErrUnavailable = errors.New("metal: Metal is only available on macOS")
	// ErrNoDevice: macOS, but MTLCreateSystemDefaultDevice gave no device
	// (a virtual machine without a GPU, a headless session).
	ErrNoDevice = errors.New("metal: no Metal device")
	// ErrCommandBuffer is wrapped by every error a command buffer reports
	// (CommandError).
	ErrCommandBuffer = errors.New("metal: command buffer failed")
	// ErrUnsupported is wrapped for what this backend cannot do: by Bind,
	// a kernel without MSL, a slot beyond Metal's 31, inline bytes over
	// 4 KiB, a buffer it did not make; by Derive, a recipe other than
	// concat_rows; by Copy (through Wait), offsets or sizes that are not
	// multiples of 4.
	ErrUnsupported = errors.New("metal: unsupported")
)

// MTLCommandEncoderErrorState (MTLCommandBuffer.h): what the GPU says of
// each encoder of a failed command buffer when the buffer was created with
// MTLCommandBufferErrorOptionEncoderExecutionStatus.
const (
	encoderStateUnknown   = 0
	encoderStateCompleted = 1
	encoderStateAffected  = 2
	encoderStatePending   = 3
	encoderStateFaulted   = 4
)

// encoderInfo is one MTLCommandBufferEncoderInfo, read into Go: the
// encoder's label ("step 3", or a command's label in per-command mode),
// its debug signposts (the pushDebugGroup labels: one per command) and
// its error state.
type encoderInfo struct {
	Label     string
	Signposts []string
	State     int
}

// CommandError is a command buffer that ended in
// MTLCommandBufferStatusError: which command faulted, when Metal says, and
// Metal's own description.
type CommandError struct {
	// Label is the failing command's label ("L6.attn.flash"); empty when
	// Metal named no faulted encoder.
	Label string
	// Step is the chain step (0..n-1) of the faulted encoder; -1 unknown.
	Step int
	// Commands is how many commands the buffer held, Steps how many steps.
	Commands, Steps int
	// Code is the NSError code (MTLCommandBufferError: 2 timeout, 3 page
	// fault, 5 not permitted, 8 out of memory, 9 invalid resource ...).
	Code int64
	// Message is the error's localizedDescription.
	Message string
}

func (e *CommandError) Error() string {
	var b strings.Builder
	b.WriteString(ErrCommandBuffer.Error())
	switch {
	case e.Label != "" && e.Step >= 0:
		fmt.Fprintf(&b, " in %s (step %d of %d)", e.Label, e.Step, e.Steps)
	case e.Label != "":
		fmt.Fprintf(&b, " in %s", e.Label)
	case e.Step >= 0:
		fmt.Fprintf(&b, " in step %d of %d (Metal named no command of its %d)", e.Step, e.Steps, e.Commands)
	default:
		fmt.Fprintf(&b, " (Metal named none of its %d commands)", e.Commands)
	}
	if name, ok := commandBufferErrors[e.Code]; ok {
		fmt.Fprintf(&b, ": %s", name)
	} else if e.Code != 0 {
		fmt.Fprintf(&b, ": code %d", e.Code)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	return b.String()
}

func (e *CommandError) Unwrap() error { return ErrCommandBuffer }

// commandBufferErrors names MTLCommandBufferError codes.
var commandBufferErrors = map[int64]string{
	1:  "internal error",
	2:  "timeout",
	3:  "page fault",
	4:  "blacklisted (access revoked)",
	5:  "not permitted",
	7:  "out of memory",
	8:  "invalid resource",
	9:  "memoryless",
	10: "device removed",
	11: "stack overflow",
}

// failedCommand names the command a failed buffer's encoder infos point
// at: the first faulted encoder, else the first one left affected; its
// innermost debug signpost is the command's label (or, in per-command
// mode, the encoder's own label is). step comes from a "step N" label.
func failedCommand(infos []encoderInfo) (label string, step int) {
	pick := -1
	for _, want := range []int{encoderStateFaulted, encoderStateAffected} {
		for i, in := range infos {
			if in.State == want {
				pick = i
				break
			}
		}
		if pick >= 0 {
			break
		}
	}
	if pick < 0 {
		return "", -1
	}
	in := infos[pick]
	step = -1
	name := in.Label
	// "step N" (one encoder per step) or "step N: LABEL" (per command).
	if rest, ok := strings.CutPrefix(in.Label, "step "); ok {
		num, label, _ := strings.Cut(rest, ": ")
		if n, err := strconv.Atoi(num); err == nil {
			step, name = n, label
		}
	}
	if len(in.Signposts) > 0 {
		name = in.Signposts[len(in.Signposts)-1]
	}
	return name, step
}
