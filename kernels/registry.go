package kernels

import (
	"fmt"
	"slices"
	"sort"
	"sync"
)

// The implementation registry: which backends implement which kernels. A
// backend package registers its kernels from init, so the catalog states
// what is implemented rather than what is hoped for: a kernel no linked
// backend registered lists no backends, and a plan that needs it fails on
// that backend with its name.
var registry struct {
	sync.RWMutex
	impl map[string]map[string]bool // kernel name → backend → registered
}

// Register records that backend ("cpu", "metal", "cuda") implements the
// named kernels. Naming a kernel the catalog does not have is an error
// (wrapping ErrNoKernel) and registers nothing, so a backend cannot drift
// from the catalog silently. Registering twice is harmless.
func Register(backend string, names ...string) error {
	if backend == "" {
		return fmt.Errorf("kernels: Register: empty backend name")
	}
	for _, n := range names {
		if _, ok := byName[n]; !ok {
			return fmt.Errorf("kernels: backend %s registers %q: %w in the catalog", backend, n, ErrNoKernel)
		}
	}
	registry.Lock()
	defer registry.Unlock()
	if registry.impl == nil {
		registry.impl = map[string]map[string]bool{}
	}
	for _, n := range names {
		if registry.impl[n] == nil {
			registry.impl[n] = map[string]bool{}
		}
		registry.impl[n][backend] = true
	}
	return nil
}

// MustRegister is Register for a backend's init: it panics on an error.
func MustRegister(backend string, names ...string) {
	if err := Register(backend, names...); err != nil {
		panic(err)
	}
}

// Backends lists the backends that registered k, sorted; empty when none.
func (k *Kernel) Backends() []string {
	registry.RLock()
	defer registry.RUnlock()
	out := []string{}
	for b := range registry.impl[k.Name] {
		out = append(out, b)
	}
	sort.Strings(out)
	return out
}

// Implemented lists the kernels backend registered, in catalog order.
func Implemented(backend string) []string {
	registry.RLock()
	defer registry.RUnlock()
	var out []string
	for _, k := range catalog {
		if registry.impl[k.Name][backend] {
			out = append(out, k.Name)
		}
	}
	return out
}

// Missing lists the kernels of names that backend has not registered: what
// a plan needs and the backend lacks. The runtime checks a plan's
// pipelines with it before running anything.
func Missing(backend string, names []string) []string {
	registry.RLock()
	defer registry.RUnlock()
	var out []string
	for _, n := range names {
		if !registry.impl[n][backend] && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// unregister removes backend's registrations (tests).
func unregister(backend string) {
	registry.Lock()
	defer registry.Unlock()
	for _, m := range registry.impl {
		delete(m, backend)
	}
}
