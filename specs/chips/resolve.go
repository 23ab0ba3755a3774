package chips

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/akunu-dev/akunu/internal/typo"
)

// ErrUnknownChip is wrapped by Resolve's errors for a name no profile has.
var ErrUnknownChip = errors.New("unknown chip")

// All returns the profiles of the embedded catalog.
func All() []Profile { return Default().All() }

// Lookup finds a profile of the embedded catalog by name or alias.
func Lookup(name string) (Profile, bool) { return Default().Lookup(name) }

// Resolve turns a user's --chip value into a profile of the embedded catalog;
// see Catalog.Resolve.
func Resolve(name string, cores int) (Profile, error) { return Default().Resolve(name, cores) }

// All returns every profile, Apple first, in the order of the files.
func (c *Catalog) All() []Profile {
	out := make([]Profile, len(c.profiles))
	for i, p := range c.profiles {
		out[i] = p.clone()
	}
	return out
}

// Lookup finds a profile by name or alias. Names are matched after
// normalize, so "Apple M3 Pro", "M3 Pro" and "m3-pro" are one name.
func (c *Catalog) Lookup(name string) (Profile, bool) {
	i, ok := c.byName[normalize(name)]
	if !ok {
		return Profile{}, false
	}
	return c.profiles[i].clone(), true
}

// Resolve turns a --chip value into a profile. name is one of
//
//	m4-pro-20, m4-pro, "Apple M4 Pro"   a profile by name or alias
//	m4-pro:16                            the 16-core bin of the M4 Pro
//	cpu-avx2, cpu-avx2:16                a CPU target, with its core count
//	cpu                                  the CPU target of this machine
//	auto                                 what Detect finds on this machine
//
// cores, when positive, is the same as a ":cores" suffix. A CPU target
// without either gets runtime.NumCPU(): a CPU plan records the cores it was
// compiled for. For a GPU, cores picks a bin of the same chip.
func (c *Catalog) Resolve(name string, cores int) (Profile, error) {
	base, suffix, hasSuffix := strings.Cut(strings.TrimSpace(name), ":")
	if hasSuffix {
		n, err := strconv.Atoi(suffix)
		if err != nil || n <= 0 {
			return Profile{}, fmt.Errorf("chip %q: %q after ':' is not a core count", name, suffix)
		}
		if cores > 0 && cores != n {
			return Profile{}, fmt.Errorf("chip %q: the name says %d cores, the option %d", name, n, cores)
		}
		cores = n
	}
	if cores < 0 {
		return Profile{}, fmt.Errorf("chip %q: negative core count %d", name, cores)
	}
	var p Profile
	switch normalize(base) {
	case "":
		return Profile{}, fmt.Errorf("%w: empty chip name (try auto, or see akunuc chips)", ErrUnknownChip)
	case "auto":
		d, _, err := c.detect(hostProbe())
		if err != nil {
			return Profile{}, err
		}
		p = d
	case "cpu":
		d, _, err := c.detectCPU(hostProbe())
		if err != nil {
			return Profile{}, err
		}
		p = d
	default:
		var ok bool
		if p, ok = c.Lookup(base); !ok {
			msg := fmt.Sprintf("%q (run 'akunuc chips' for the list)", base)
			if s := closest(normalize(base), c.sortedNames()); s != "" {
				msg = fmt.Sprintf("%q (did you mean %s?)", base, s)
			}
			return Profile{}, fmt.Errorf("%w %s", ErrUnknownChip, msg)
		}
	}
	return c.withCores(p, cores)
}

// withCores applies a core count: it sets a CPU target's cores (0 takes the
// machine's), and picks a GPU's bin.
func (c *Catalog) withCores(p Profile, cores int) (Profile, error) {
	if p.Kind == CPU {
		if cores == 0 {
			cores = p.CPUCores
		}
		if cores == 0 {
			cores = runtime.NumCPU()
		}
		p.CPUCores = cores
		return p, nil
	}
	if cores == 0 || cores == p.GPUCores {
		return p, nil
	}
	bins := c.Bins(p)
	for _, b := range bins {
		if b.GPUCores == cores {
			return b, nil
		}
	}
	have := make([]string, len(bins))
	for i, b := range bins {
		have[i] = strconv.Itoa(b.GPUCores)
	}
	return Profile{}, fmt.Errorf("%w: %s has no %d-core bin (there are %s)", ErrUnknownChip, p.Chip, cores, strings.Join(have, ", "))
}

// Bins returns the profiles of the same chip as p (its binned variants),
// fewest cores first; a CPU target or an NVIDIA GPU is its only bin.
func (c *Catalog) Bins(p Profile) []Profile {
	var out []Profile
	for _, q := range c.profiles {
		if q.Name == p.Name || (p.Chip != "" && q.Vendor == p.Vendor && q.Chip == p.Chip) {
			out = append(out, q.clone())
		}
	}
	slices.SortStableFunc(out, func(a, b Profile) int { return a.GPUCores - b.GPUCores })
	return out
}

// normalize folds the ways people write a chip into the catalog's names:
// lower case, vendor prefix dropped, spaces and '_' as '-'.
func normalize(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, prefix := range []string{"apple ", "nvidia "} {
		s = strings.TrimPrefix(s, prefix)
	}
	s = strings.NewReplacer(" ", "-", "_", "-").Replace(s)
	for strings.Contains(s, "--") {
		s = strings.ReplaceAll(s, "--", "-")
	}
	return s
}

// closest returns the candidate nearest to s in edit distance, if it is near
// enough to be a typo.
func closest(s string, candidates []string) string {
	best, bestD := "", len(s)/3+2
	for _, c := range candidates {
		if d := typo.Distance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}
