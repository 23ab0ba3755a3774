package specs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/akunu-dev/akunu/archs"
)

// Registry holds a set of checked specs and answers which one compiles a
// model of a given general.architecture.
type Registry struct {
	specs  map[string]*Arch // by spec name, abstract ones included
	byArch map[string]*Arch // by general.architecture
}

var builtin = sync.OnceValues(func() (*Registry, error) {
	return LoadFS(archs.FS, "archs/")
})

// Builtin returns the registry of the specs embedded from archs/. It is
// loaded once; the result is shared and must not be modified.
func Builtin() (*Registry, error) { return builtin() }

// LoadFS loads and checks every *.yaml file at the root of fsys. prefix is
// put before file names in positions ("archs/" gives archs/llama.yaml:3:5).
// All problems of all files are returned together as an ErrorList.
func LoadFS(fsys fs.FS, prefix string) (*Registry, error) {
	names, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		files[prefix+n] = b
	}
	return Load(files)
}

// Load loads and checks specs given as file name → contents. A spec's name
// is its file's stem.
func Load(files map[string][]byte) (*Registry, error) {
	var c errs
	parsed := map[string]*specFile{}
	fileNames := make([]string, 0, len(files))
	for f := range files {
		fileNames = append(fileNames, f)
	}
	sort.Strings(fileNames)
	for _, f := range fileNames {
		sf, err := parseFile(stem(f), f, files[f])
		c.merge(err)
		if prev, dup := parsed[sf.name]; dup {
			c.add(ErrInvalid, Pos{File: f}, "", "spec %q is also defined by %s", sf.name, prev.file)
			continue
		}
		parsed[sf.name] = sf
	}

	r := &Registry{specs: map[string]*Arch{}, byArch: map[string]*Arch{}}
	chains := map[string][]*specFile{}
	for _, name := range sortedKeys(parsed) {
		if chain, ok := inheritChain(parsed, parsed[name], &c); ok {
			chains[name] = chain
		}
	}
	// Parents are checked before their children, so that an error in a
	// parent is reported once, at the parent.
	reported := map[string]bool{}
	for _, name := range sortedByDepth(chains) {
		chain := chains[name]
		if anyBroken(chain) {
			continue // its syntax error is reported; checking it would only echo it
		}
		a := merge(chain)
		var ac errs
		check(a, &ac)
		for _, e := range ac.list {
			key := e.Error()
			if e.Pos.File != a.File {
				if reported[key] {
					continue
				}
				e.Msg += fmt.Sprintf(" (in %s, which inherits from %s)", a.Name, stem(e.Pos.File))
			}
			reported[key] = true
			c.addErr(e)
		}
		r.specs[name] = a
	}
	for _, name := range sortedKeys(r.specs) {
		a := r.specs[name]
		for _, g := range a.Architectures {
			if prev, dup := r.byArch[g]; dup {
				c.add(ErrInvalid, a.archPos, "architectures", "%q is claimed by both %s and %s", g, prev.Name, a.Name)
				continue
			}
			r.byArch[g] = a
		}
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	return r, nil
}

// inheritChain returns the spec and its ancestors, the spec first.
func inheritChain(parsed map[string]*specFile, sf *specFile, c *errs) ([]*specFile, bool) {
	chain := []*specFile{sf}
	seen := map[string]bool{sf.name: true}
	for cur := sf; cur.inherit != ""; {
		parent, ok := parsed[cur.inherit]
		if !ok {
			if cur == sf {
				c.add(ErrUnknownName, cur.inheritPos, "inherit", "unknown spec %q%s", cur.inherit, suggest(cur.inherit, sortedKeys(parsed)))
			}
			return nil, false
		}
		if seen[parent.name] {
			names := make([]string, 0, len(chain)+1)
			for _, s := range chain {
				names = append(names, s.name)
			}
			names = append(names, parent.name)
			if parent == sf {
				c.add(ErrCycle, sf.inheritPos, "inherit", "inheritance cycle: %s", strings.Join(names, " -> "))
			}
			return nil, false
		}
		seen[parent.name] = true
		chain = append(chain, parent)
		cur = parent
	}
	return chain, true
}

func anyBroken(chain []*specFile) bool {
	for _, sf := range chain {
		if sf.broken {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedByDepth(chains map[string][]*specFile) []string {
	names := sortedKeys(chains)
	sort.SliceStable(names, func(i, j int) bool { return len(chains[names[i]]) < len(chains[names[j]]) })
	return names
}

// ForArchitecture returns the spec that compiles models whose
// general.architecture is name.
func (r *Registry) ForArchitecture(name string) (*Arch, error) {
	if a, ok := r.byArch[name]; ok {
		return a, nil
	}
	known := r.Architectures()
	return nil, &Error{Kind: ErrUnknownArch, Msg: fmt.Sprintf("no spec for general.architecture %q%s; known: %s",
		name, suggest(name, known), strings.Join(known, ", "))}
}

// Spec returns a spec by its name (the file's stem), abstract ones included.
func (r *Registry) Spec(name string) (*Arch, bool) {
	a, ok := r.specs[name]
	return a, ok
}

// Names lists the concrete (not abstract) specs, sorted.
func (r *Registry) Names() []string {
	var out []string
	for _, n := range sortedKeys(r.specs) {
		if !r.specs[n].Abstract {
			out = append(out, n)
		}
	}
	return out
}

// Architectures lists every general.architecture some spec matches, sorted.
func (r *Registry) Architectures() []string { return sortedKeys(r.byArch) }

// merge applies a chain of spec files, ancestor first, into one Arch.
func merge(chain []*specFile) *Arch {
	self := chain[0]
	a := &Arch{
		Name:          self.name,
		File:          self.file,
		Architectures: self.architectures,
		Doc:           self.doc,
		Abstract:      self.abstract,
		archPos:       self.archPos,
	}
	h := sha256.New()
	for i := len(chain) - 1; i >= 0; i-- {
		sf := chain[i]
		a.Chain = append([]string{sf.name}, a.Chain...)
		fmt.Fprintf(h, "%s\x00%d\x00", path.Base(sf.file), len(sf.src))
		h.Write(sf.src)
		if sf.ropeStyle != "" {
			a.ropeStyle, a.ropeStylePos = sf.ropeStyle, sf.ropeStylePos
		}
		if sf.output != "" {
			a.Output, a.outputPos = Output(sf.output), sf.outputPos
		}
		if sf.chatTemplate != "" {
			a.ChatTemplate = sf.chatTemplate
		}
		a.hparams = mergeNamed(a.hparams, sf.hparams,
			func(d *hparamDecl) string { return d.name }, func(d *hparamDecl) bool { return d.deleted })
		a.tensors = mergeNamed(a.tensors, sf.tensors,
			func(d *tensorDecl) string { return d.logical }, func(d *tensorDecl) bool { return d.deleted })
		a.layer = mergeNamed(a.layer, sf.layer,
			func(b *block) string { return b.name }, func(b *block) bool { return b.deleted })
		a.require = append(a.require, sf.require...)
		if sf.hasPro {
			a.prologue = sf.prologue
		}
		if sf.hasEpi {
			a.epilogue = sf.epilogue
		}
	}
	a.digest = hex.EncodeToString(h.Sum(nil))
	return a
}

// mergeNamed overrides entries by name: a child's entry replaces the
// parent's in place, a new one is appended, a deleted one (null in YAML)
// removes it.
func mergeNamed[T any](parent, child []T, name func(T) string, deleted func(T) bool) []T {
	out := append([]T(nil), parent...)
	for _, c := range child {
		i := -1
		for j, p := range out {
			if name(p) == name(c) {
				i = j
				break
			}
		}
		switch {
		case deleted(c) && i >= 0:
			out = append(out[:i], out[i+1:]...)
		case deleted(c):
		case i >= 0:
			out[i] = c
		default:
			out = append(out, c)
		}
	}
	return out
}
