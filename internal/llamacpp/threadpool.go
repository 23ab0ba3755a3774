package llamacpp

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"
)

// threadpoolParams mirrors struct ggml_threadpool_params (ggml.h):
// cpumask[GGML_MAX_N_THREADS = 512] bools, then n_threads, prio, poll,
// strict_cpu, paused.
type threadpoolParams struct {
	cpumask   [512]bool
	nThreads  int32
	prio      int32
	poll      uint32
	strictCPU bool
	paused    bool
	_         [2]byte
}

// AttachThreadpool gives the context a persistent pool of n threads, as
// llama.cpp's own tools (llama-bench, llama-cli, llama-server) do: without
// one, every graph computation starts and joins its threads, which costs
// decode dearly at high thread counts. The pool takes llama.cpp's default
// parameters (polling 50) and is freed with the context.
func (c *Context) AttachThreadpool(n int) error {
	if c.pool != 0 {
		return errors.New("llamacpp: a threadpool is already attached")
	}
	l := c.m.lib
	var (
		devByType  func(t int32) uintptr
		devReg     func(dev uintptr) uintptr
		procAddr   func(reg uintptr, name string) uintptr
		paramsInit func(p *threadpoolParams, n int32)
		attach     func(ctx, pool, poolBatch uintptr)
	)
	var b binder
	b.fn(l.ggml.ggml, "ggml_backend_dev_by_type", &devByType)
	b.fn(l.ggml.ggml, "ggml_backend_dev_backend_reg", &devReg)
	b.fn(l.ggml.ggml, "ggml_backend_reg_get_proc_address", &procAddr)
	b.fn(l.ggml.base, "ggml_threadpool_params_init", &paramsInit)
	b.fn(l.ll.handle, "llama_attach_threadpool", &attach)
	if b.err != nil {
		return b.err
	}
	dev := devByType(0) // GGML_BACKEND_DEVICE_TYPE_CPU
	if dev == 0 {
		return errors.New("llamacpp: no CPU backend device")
	}
	reg := devReg(dev)
	newAddr, freeAddr := procAddr(reg, "ggml_threadpool_new"), procAddr(reg, "ggml_threadpool_free")
	if newAddr == 0 || freeAddr == 0 {
		return errors.New("llamacpp: the CPU backend exports no ggml_threadpool_new")
	}
	var newPool func(p *threadpoolParams) uintptr
	purego.RegisterFunc(&newPool, newAddr)
	var p threadpoolParams
	if unsafe.Sizeof(p) != 528 {
		return fmt.Errorf("llamacpp: ggml_threadpool_params mirrored as %d bytes, not 528", unsafe.Sizeof(p))
	}
	paramsInit(&p, int32(n))
	pool := newPool(&p)
	if pool == 0 {
		return fmt.Errorf("llamacpp: ggml_threadpool_new failed for %d threads", n)
	}
	attach(c.ptr, pool, 0)
	c.pool, c.poolFree = pool, freeAddr
	return nil
}

func (c *Context) freePool() {
	if c.pool == 0 {
		return
	}
	var free func(pool uintptr)
	purego.RegisterFunc(&free, c.poolFree)
	free(c.pool)
	c.pool = 0
}
