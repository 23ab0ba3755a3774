package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"
	"text/tabwriter"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/kernels"

	// The backends register the kernels they implement; linking them here
	// is what lets `akunuc kernels` say which backend runs what.
	_ "github.com/akunu-dev/akunu/kernels/metal"
	_ "github.com/akunu-dev/akunu/runtime/cpu"
)

var kernelsCmd = cli.Command{
	Name:    "kernels",
	Summary: "list the kernel catalog: names, parameter structs, bindings, constants, backends",
	Usage: "[--json] [PATTERN ...]\n" +
		"       akunuc kernels --structs [--json]",
}

func init() {
	kernelsCmd.Run = runKernels
	app.Register(kernelsCmd)
}

// kernelJSON is one element of `akunuc kernels --json` (docs/kernels.md#json).
type kernelJSON struct {
	Name      string             `json:"name"`
	Op        string             `json:"op"`
	DType     string             `json:"dtype,omitempty"` // the weight's (table's, target's) type, for ops that have one
	Variant   []string           `json:"variant"`
	Act       string             `json:"act"` // activation dtype
	Summary   string             `json:"summary"`
	Params    paramsJSON         `json:"params"`
	Bindings  []kernels.Binding  `json:"bindings"`
	Constants []kernels.Constant `json:"constants"`
	Geometry  string             `json:"geometry"`
	Backends  []string           `json:"backends"`
}

type paramsJSON struct {
	Struct    string         `json:"struct"`
	Slot      int            `json:"slot"`
	Size      int            `json:"size"`
	Patchable map[string]int `json:"patchable"`
}

func runKernels(ctx *cli.Context, args []string) error {
	fs := ctx.Flags(kernelsCmd.Name)
	asJSON := fs.Bool("json", false, "print JSON (an array of kernels)")
	structs := fs.Bool("structs", false, "print the parameter structs' layouts instead")
	patterns, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if *structs {
		if len(patterns) > 0 {
			return fmt.Errorf("%w: --structs takes no patterns", cli.ErrUsage)
		}
		return printStructs(ctx.Stdout, *asJSON)
	}
	ks, err := matchKernels(patterns)
	if err != nil {
		return err
	}
	if *asJSON {
		out := make([]kernelJSON, len(ks))
		for i, k := range ks {
			out[i] = toKernelJSON(k)
		}
		enc := json.NewEncoder(ctx.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	return printKernels(ctx.Stdout, ks)
}

// matchKernels selects the kernels whose names match one of the glob
// patterns (all of them when there are none); a pattern that matches
// nothing is an error, so a typo does not print an empty list.
func matchKernels(patterns []string) ([]*kernels.Kernel, error) {
	all := kernels.All()
	if len(patterns) == 0 {
		return all, nil
	}
	var out []*kernels.Kernel
	hit := make([]bool, len(patterns))
	for _, k := range all {
		match := false
		for i, p := range patterns {
			ok, err := path.Match(p, k.Name)
			if err != nil {
				return nil, fmt.Errorf("%w: pattern %q: %v", cli.ErrUsage, p, err)
			}
			hit[i] = hit[i] || ok
			match = match || ok
		}
		if match {
			out = append(out, k)
		}
	}
	for i, p := range patterns {
		if !hit[i] {
			return nil, fmt.Errorf("no kernel matches %q (akunuc kernels lists them all)", p)
		}
	}
	return out, nil
}

func toKernelJSON(k *kernels.Kernel) kernelJSON {
	j := kernelJSON{
		Name:      k.Name,
		Op:        k.Op.String(),
		Variant:   k.Variant.Names(),
		Act:       strings.ToLower(k.Act.String()),
		Summary:   k.Summary,
		Params:    paramsJSON{Struct: k.Params.Name, Slot: k.ParamSlot, Size: k.Params.Size, Patchable: k.Patchable},
		Bindings:  k.Bindings,
		Constants: k.Constants,
		Geometry:  k.GeometryDoc,
		Backends:  k.Backends(),
	}
	if k.Op.Typed() {
		j.DType = strings.ToLower(k.DType.String())
	}
	if j.Constants == nil {
		j.Constants = []kernels.Constant{}
	}
	return j
}

func printKernels(w io.Writer, ks []*kernels.Kernel) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPARAMS\tBINDINGS\tCONSTANTS\tBACKENDS")
	for _, k := range ks {
		var bs []string
		for _, b := range k.Bindings {
			if b.Role == kernels.RoleParam {
				continue
			}
			s := b.Name
			switch b.Access {
			case kernels.Write:
				s += "*"
			case kernels.ReadWrite:
				s += "+"
			}
			if b.When != "" {
				s += "?"
			}
			bs = append(bs, s)
		}
		var cs []string
		for _, c := range k.Constants {
			cs = append(cs, c.Name)
		}
		fmt.Fprintf(tw, "%s\t%s@%d\t%s\t%s\t%s\n", k.Name, k.Params.Name, k.ParamSlot,
			strings.Join(bs, " "), dash(strings.Join(cs, " ")), dash(strings.Join(k.Backends(), ",")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d kernels. Bindings in slot order, the parameter struct at the slot after @;\n", len(ks))
	fmt.Fprintln(w, "* written, + read and written, ? bound only when its constant is set. docs/kernels.md has the contracts.")
	return nil
}

func printStructs(w io.Writer, asJSON bool) error {
	ss := kernels.ParamStructs()
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(ss)
	}
	var buf strings.Builder
	for i, s := range ss {
		if i > 0 {
			fmt.Fprintln(&buf)
		}
		fmt.Fprintf(&buf, "%s (%d bytes)\n", s.Name, s.Size)
		tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
		for _, f := range s.Fields {
			patch := ""
			if f.Patch != "" {
				patch = "patched: " + f.Patch
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", f.Offset, f.CType, f.Name, patch)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for line := range strings.Lines(buf.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
	return nil
}
