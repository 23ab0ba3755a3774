//go:build amd64 && !purego

package cpu

// pause is the spin-wait hint (PAUSE): it stalls the core for tens to a
// hundred-odd cycles, so a spinning worker polls less often, leaves the
// sibling hyperthread its share, and reaches its periodic yield later.
//
//go:noescape
func pause()
