package chips

import (
	"bytes"
	"cmp"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

//go:embed *.yaml
var embedded embed.FS

// ErrInvalid is wrapped by every error about the content of a profile file.
var ErrInvalid = errors.New("invalid chip profile")

// Error is one problem in a profile file, with its position.
type Error struct {
	File      string
	Line, Col int // 1-based; 0 when unknown
	Msg       string
}

func (e *Error) Error() string {
	switch {
	case e.Line > 0 && e.Col > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

func (e *Error) Unwrap() error { return ErrInvalid }

// file is the schema of one YAML file: a list of profiles.
type file struct {
	Profiles []Profile `yaml:"profiles"`
}

// Catalog is a set of profiles with unique names and aliases.
type Catalog struct {
	profiles []Profile      // in file order, files sorted by name
	byName   map[string]int // name or alias → index
}

var defaultCatalog = sync.OnceValues(func() (*Catalog, error) { return load(embedded, "specs/chips") })

// Default returns the catalog of the embedded profiles. They are checked by
// the package's tests, so an error here means a broken build; it panics.
func Default() *Catalog {
	c, err := defaultCatalog()
	if err != nil {
		panic("chips: embedded profiles: " + err.Error())
	}
	return c
}

// Load reads every *.yaml file at the root of fsys. It reports every problem
// it finds, joined; each wraps ErrInvalid and starts with file:line:col.
func Load(fsys fs.FS) (*Catalog, error) { return load(fsys, "") }

// load names files dir/NAME in errors and positions.
func load(fsys fs.FS, dir string) (*Catalog, error) {
	names, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var all []Profile
	var errs []error
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ps, err := ParseFile(path.Join(dir, name), data)
		if err != nil {
			errs = append(errs, err)
		}
		all = append(all, ps...)
	}
	c, err := newCatalog(all)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

func newCatalog(ps []Profile) (*Catalog, error) {
	c := &Catalog{profiles: ps, byName: map[string]int{}}
	var errs []error
	for i, p := range ps {
		for _, n := range append([]string{p.Name}, p.Aliases...) {
			if j, dup := c.byName[n]; dup {
				errs = append(errs, fmt.Errorf("%s: %w: name %q already used by %s (%s)", p.Pos, ErrInvalid, n, ps[j].Name, ps[j].Pos))
				continue
			}
			c.byName[n] = i
		}
	}
	return c, errors.Join(errs...)
}

// ParseFile decodes one profile file; name is used in error messages. The
// schema is strict: unknown fields are errors, required fields must be
// present, and values are checked per vendor.
func ParseFile(name string, data []byte) ([]Profile, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlError(name, err, nil)
	}
	if len(root.Content) == 0 {
		return nil, &Error{File: name, Msg: "empty file: want a profiles: list"}
	}
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, yamlError(name, err, &root)
	}
	items := profileNodes(root.Content[0])
	if len(f.Profiles) == 0 || len(items) != len(f.Profiles) {
		return nil, &Error{File: name, Line: root.Content[0].Line, Col: root.Content[0].Column, Msg: "want a non-empty profiles: list"}
	}
	var errs []error
	for i := range f.Profiles {
		p := &f.Profiles[i]
		n := items[i]
		p.Pos = fmt.Sprintf("%s:%d:%d", name, n.Line, n.Column)
		v := validator{file: name, node: n}
		v.check(p)
		errs = append(errs, v.errs...)
	}
	slices.SortStableFunc(errs, func(a, b error) int {
		ea, eb := a.(*Error), b.(*Error)
		return cmp.Or(cmp.Compare(ea.Line, eb.Line), cmp.Compare(ea.Col, eb.Col))
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return f.Profiles, nil
}

// profileNodes returns the mapping nodes of the profiles: list.
func profileNodes(doc *yaml.Node) []*yaml.Node {
	if doc.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == "profiles" && doc.Content[i+1].Kind == yaml.SequenceNode {
			return doc.Content[i+1].Content
		}
	}
	return nil
}

var (
	reYAMLLine     = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	reUnknownField = regexp.MustCompile(`^field (\S+) not found in type`)
)

// yamlError turns yaml.v3's errors ("line 7: field slcc not found in type
// chips.Profile") into *Errors with a position and a plain message.
func yamlError(name string, err error, root *yaml.Node) error {
	var lines []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		lines = te.Errors
	} else {
		lines = []string{err.Error()}
	}
	var errs []error
	for _, l := range lines {
		e := &Error{File: name, Msg: strings.TrimPrefix(l, "yaml: ")}
		if m := reYAMLLine.FindStringSubmatch(l); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = m[2]
		}
		if m := reUnknownField.FindStringSubmatch(e.Msg); m != nil {
			e.Msg = fmt.Sprintf("unknown field %q", m[1])
			if k := findKey(root, e.Line, m[1]); k != nil {
				e.Col = k.Column
			}
			if s := closest(m[1], knownFields()); s != "" {
				e.Msg += fmt.Sprintf(" (did you mean %s?)", s)
			}
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// findKey finds a mapping key by line and text, for the column of an error.
func findKey(n *yaml.Node, line int, key string) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Line == line && k.Value == key {
				return k
			}
		}
	}
	for _, c := range n.Content {
		if k := findKey(c, line, key); k != nil {
			return k
		}
	}
	return nil
}

// knownFields lists the YAML keys of the schema, for suggestions.
func knownFields() []string {
	keys := []string{"profiles"}
	t := reflect.TypeFor[Profile]()
	for i := range t.NumField() {
		if k := t.Field(i).Tag.Get("yaml"); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	return keys
}

// validator checks one decoded profile against its node, so that each
// message points at the key or value at fault.
type validator struct {
	file string
	node *yaml.Node
	errs []error
}

func (v *validator) errorf(n *yaml.Node, format string, args ...any) {
	v.errs = append(v.errs, &Error{File: v.file, Line: n.Line, Col: n.Column, Msg: fmt.Sprintf(format, args...)})
}

// value returns the value node of key, or nil.
func (v *validator) value(key string) *yaml.Node {
	for i := 0; i+1 < len(v.node.Content); i += 2 {
		if v.node.Content[i].Value == key {
			return v.node.Content[i+1]
		}
	}
	return nil
}

// require reports each missing key.
func (v *validator) require(keys ...string) {
	for _, k := range keys {
		if v.value(k) == nil {
			v.errorf(v.node, "missing field %s", k)
		}
	}
}

// forbid reports keys that do not apply to this kind of profile.
func (v *validator) forbid(why string, keys ...string) {
	for _, k := range keys {
		if n := v.value(k); n != nil {
			v.errorf(n, "%s does not apply to %s", k, why)
		}
	}
}

var (
	reName   = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)
	reApple  = regexp.MustCompile(`^apple[0-9]+$`)
	reNVIDIA = regexp.MustCompile(`^sm[0-9]+$`)
)

// cpuISAs are the CPU targets the CPU backend has kernels for, with the
// architecture and instruction-set level each implies.
var cpuISAs = map[string]struct{ arch, family string }{
	"avx2":   {"amd64", "x86-64-v3"},
	"avx512": {"amd64", "x86-64-v4"},
	"neon":   {"arm64", "armv8-a"},
}

func (v *validator) check(p *Profile) {
	v.require("name", "vendor", "family")
	if n := v.value("name"); n != nil && !reName.MatchString(p.Name) {
		v.errorf(n, "name %q: want lower-case words joined by '-'", p.Name)
	}
	if n := v.value("aliases"); n != nil {
		for i, a := range p.Aliases {
			if !reName.MatchString(a) {
				v.errorf(n.Content[i], "alias %q: want lower-case words joined by '-'", a)
			}
		}
	}
	if n := v.value("bandwidth_gbs"); n != nil && p.BandwidthGBs < 0 {
		v.errorf(n, "bandwidth_gbs must not be negative")
	}
	if n := v.value("memory_gb"); n != nil {
		for i, m := range p.MemoryGB {
			if m <= 0 {
				v.errorf(n.Content[i], "memory_gb: %d is not a size", m)
			}
		}
	}
	if p.Unreleased && p.Note == "" {
		v.errorf(v.value("unreleased"), "an unreleased profile needs a note saying why it is here")
	}
	switch p.Vendor {
	case Apple, NVIDIA:
		p.Kind = GPU
		v.require("chip", "gpu_cores", "bandwidth_gbs", "slc")
		v.forbid("a GPU", "isa", "arch")
		if n := v.value("gpu_cores"); n != nil && p.GPUCores <= 0 {
			v.errorf(n, "gpu_cores must be positive")
		}
		if n := v.value("bandwidth_gbs"); n != nil && p.BandwidthGBs <= 0 {
			v.errorf(n, "bandwidth_gbs must be positive")
		}
		if n := v.value("slc"); n != nil && p.SLC <= 0 {
			v.errorf(n, "slc must be positive")
		}
	case Generic:
		p.Kind = CPU
		v.require("isa", "arch")
		v.forbid("a CPU target (cores are chosen at compile time)", "gpu_cores")
		v.forbid("a CPU target", "chip", "match", "metal")
		if n := v.value("isa"); n != nil {
			want, ok := cpuISAs[p.ISA]
			switch {
			case !ok:
				v.errorf(n, "isa %q: want one of avx2, avx512, neon", p.ISA)
			case p.Arch != want.arch:
				v.errorf(v.node, "isa %s implies arch %s, not %q", p.ISA, want.arch, p.Arch)
			case p.Family != want.family:
				v.errorf(v.node, "isa %s implies family %s, not %q", p.ISA, want.family, p.Family)
			}
		}
	default:
		if n := v.value("vendor"); n != nil {
			v.errorf(n, "vendor %q: want apple, nvidia or generic", p.Vendor)
		}
	}
	switch p.Vendor {
	case Apple:
		v.require("metal")
		v.forbid("an Apple chip (detection matches chip)", "match")
		if n := v.value("family"); n != nil && !reApple.MatchString(p.Family) {
			v.errorf(n, "family %q: want an Apple GPU family (apple7, apple8, apple9)", p.Family)
		}
		// The naming scheme is a rule, not a habit: <chip>-<gpu cores>.
		want := normalize(p.Chip) + "-" + strconv.Itoa(p.GPUCores)
		if n := v.value("name"); n != nil && p.Chip != "" && p.GPUCores > 0 && p.Name != want {
			v.errorf(n, "name %q: an Apple profile is named <chip>-<gpu cores>: %s", p.Name, want)
		}
	case NVIDIA:
		v.require("match")
		v.forbid("an NVIDIA GPU", "metal")
		if n := v.value("family"); n != nil && !reNVIDIA.MatchString(p.Family) {
			v.errorf(n, "family %q: want a CUDA architecture (sm90)", p.Family)
		}
	}
}

// sortedNames returns every name and alias, sorted, for suggestions.
func (c *Catalog) sortedNames() []string { return slices.Sorted(maps.Keys(c.byName)) }
