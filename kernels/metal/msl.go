package metal

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/akunu-dev/akunu/kernels"
	"github.com/akunu-dev/akunu/kernels/gpu"
)

//go:embed *.metal
var sources embed.FS

// Files lists the .metal files, sorted.
func Files() []string {
	names, _ := fs.Glob(sources, "*.metal")
	sort.Strings(names)
	return names
}

// Source returns one .metal file as a self-contained translation unit: its
// local includes (the prelude, "ShaderTypes.h", the family's bodies from
// kernels/gpu) inlined, so that the runtime
// can hand it to newLibraryWithSource without a file system. Each file is
// one Metal library: function-constant indices are consistent within a
// file, not across files.
func Source(file string) (string, error) {
	return expand(file, map[string]bool{})
}

var localInclude = regexp.MustCompile(`(?m)^#include "([^"]+)"\s*$`)

func expand(file string, seen map[string]bool) (string, error) {
	return gpu.ExpandFrom(func(name string) ([]byte, error) {
		if b, err := sources.ReadFile(name); err == nil {
			return b, nil
		}
		// the includes: the bodies, the prelude and ShaderTypes.h (kernels/gpu)
		return fs.ReadFile(gpu.FS, name)
	}, file, seen)
}

// Kernel is what the sources say of one kernel function: the file that
// defines it, the MSL function (a template for host_name instantiations),
// its buffer parameters by index, and its body.
type Kernel struct {
	Name    string
	File    string
	Func    string
	Buffers map[int]Param
	Body    string
}

// Param is one [[buffer(i)]] parameter: its declaration (type) and name.
type Param struct {
	Type, Name string
}

// FunctionConstant is a [[function_constant(i)]] declaration of a file.
type FunctionConstant struct {
	Index      int
	Name, Type string
}

var (
	fcRE       = regexp.MustCompile(`constant\s+(\w+)\s+(\w+)\s*\[\[\s*function_constant\(\s*(\d+)\s*\)\s*\]\]`)
	kernelRE   = regexp.MustCompile(`\bkernel\s+void\s+(\w+)\s*\(`)
	hostNameRE = regexp.MustCompile(`template\s*\[\[\s*host_name\("([^"]+)"\)\s*\]\]\s*kernel\s+[\w:]+\s+(\w+)\s*<`)
	bufferRE   = regexp.MustCompile(`\[\[\s*buffer\(\s*(\d+)\s*\)\s*\]\]`)
	commentRE  = regexp.MustCompile(`(?s)//[^\n]*|/\*.*?\*/`)
)

// Parse reads the kernels and function constants of every .metal file.
func Parse() (map[string]*Kernel, map[string][]FunctionConstant, error) {
	ks := map[string]*Kernel{}
	fcs := map[string][]FunctionConstant{}
	for _, f := range Files() {
		b, err := sources.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		src := commentRE.ReplaceAllString(string(b), "")
		for _, m := range fcRE.FindAllStringSubmatch(src, -1) {
			i, _ := strconv.Atoi(m[3])
			fcs[f] = append(fcs[f], FunctionConstant{Index: i, Name: m[2], Type: m[1]})
		}
		funcs := map[string]*Kernel{} // by MSL function name
		for _, loc := range kernelRE.FindAllStringSubmatchIndex(src, -1) {
			name := src[loc[2]:loc[3]]
			params, err := gpu.Balanced(src, loc[1]-1, '(', ')')
			if err != nil {
				return nil, nil, fmt.Errorf("metal: %s: kernel %s: %w", f, name, err)
			}
			end := loc[1] + len(params) + 1 // after the closing parenthesis
			bo := strings.IndexByte(src[end:], '{')
			if bo < 0 {
				return nil, nil, fmt.Errorf("metal: %s: kernel %s has no body", f, name)
			}
			body, err := gpu.Balanced(src, end+bo, '{', '}')
			if err != nil {
				return nil, nil, fmt.Errorf("metal: %s: kernel %s: %w", f, name, err)
			}
			k := &Kernel{Name: name, File: f, Func: name, Buffers: map[int]Param{}, Body: body}
			for _, p := range gpu.SplitTop(params) {
				m := bufferRE.FindStringSubmatch(p)
				if m == nil {
					continue
				}
				i, _ := strconv.Atoi(m[1])
				if _, dup := k.Buffers[i]; dup {
					return nil, nil, fmt.Errorf("metal: %s: kernel %s: two parameters at buffer(%d)", f, name, i)
				}
				decl := strings.TrimSpace(p[:strings.Index(p, "[[")])
				j := strings.LastIndexFunc(decl, func(r rune) bool { return !isIdent(r) })
				k.Buffers[i] = Param{Type: strings.TrimSpace(decl[:j+1]), Name: decl[j+1:]}
			}
			funcs[name] = k
			if !isTemplate(src[:loc[0]]) {
				if _, dup := ks[name]; dup {
					return nil, nil, fmt.Errorf("metal: kernel %s defined twice", name)
				}
				ks[name] = k
			}
		}
		for _, m := range hostNameRE.FindAllStringSubmatch(src, -1) {
			fn, ok := funcs[m[2]]
			if !ok {
				return nil, nil, fmt.Errorf("metal: %s: host_name(%q) instantiates %s, not a kernel template of the file", f, m[1], m[2])
			}
			if _, dup := ks[m[1]]; dup {
				return nil, nil, fmt.Errorf("metal: kernel %s defined twice", m[1])
			}
			k := *fn
			k.Name = m[1]
			ks[m[1]] = &k
		}
	}
	return ks, fcs, nil
}

var templateTail = regexp.MustCompile(`template\s*<[^;{}]*>\s*$`)

func isTemplate(before string) bool { return templateTail.MatchString(before) }

func isIdent(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// Names lists the kernels the sources define, sorted.
func Names() ([]string, error) {
	ks, _, err := Parse()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ks))
	for n := range ks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

func init() {
	names, err := Names()
	if err != nil {
		panic(err)
	}
	kernels.MustRegister("metal", names...)
}
