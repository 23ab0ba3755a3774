package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/specs/chips"
)

var chipsCmd = cli.Command{
	Name:    "chips",
	Summary: "list the chip profiles and the tuning derived from each",
	Usage: "[--json] [--cores N] [NAME[:CORES] ... | auto]\n" +
		"       akunuc chips --detect [--json]\n" +
		"       akunuc chips --rules [--json]",
}

func init() {
	chipsCmd.Run = runChips
	app.Register(chipsCmd)
}

// chipJSON is one element of `akunuc chips --json` (docs/chips.md#json).
type chipJSON struct {
	chips.Profile
	Tuning   chips.Tuning `json:"tuning"`
	Detected string       `json:"detected,omitempty"` // --detect: what was found
}

// ruleJSON is one element of `akunuc chips --rules --json`.
type ruleJSON struct {
	Field string `json:"field"`
	When  string `json:"when"`
	Value any    `json:"value"`
	Why   string `json:"why"`
	Pos   string `json:"pos"`
}

func runChips(ctx *cli.Context, args []string) error {
	fs := ctx.Flags(chipsCmd.Name)
	asJSON := fs.Bool("json", false, "print JSON (an array of profiles with their tuning)")
	detect := fs.Bool("detect", false, "detect this machine and say what was found (same as the name auto)")
	rules := fs.Bool("rules", false, "print the rule table that derives the tuning")
	cores := fs.Int("cores", 0, "core count: of a CPU target, or the bin of a GPU")
	names, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if *rules {
		if *detect || len(names) > 0 {
			return fmt.Errorf("%w: --rules takes no names", cli.ErrUsage)
		}
		return printRules(ctx.Stdout, *asJSON)
	}
	if *detect {
		names = append(names, "auto")
	}

	var out []chipJSON
	if len(names) == 0 {
		for _, p := range chips.All() {
			out = append(out, chipJSON{Profile: p, Tuning: p.Tuning()})
		}
	}
	for _, name := range names {
		e, err := resolveChip(name, *cores)
		if err != nil {
			return err
		}
		out = append(out, e)
	}

	if *asJSON {
		enc := json.NewEncoder(ctx.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	for _, e := range out {
		if e.Detected != "" {
			fmt.Fprintf(ctx.Stdout, "%s\n\n", e.Detected)
		}
	}
	return printChips(ctx.Stdout, out)
}

// resolveChip resolves one name; auto also keeps what detection found.
func resolveChip(name string, cores int) (chipJSON, error) {
	if !strings.EqualFold(strings.TrimSpace(name), "auto") {
		p, err := chips.Resolve(name, cores)
		return chipJSON{Profile: p, Tuning: p.Tuning()}, err
	}
	p, found, err := chips.Detect()
	if err != nil {
		return chipJSON{}, fmt.Errorf("%v\n%s", err, found)
	}
	if cores > 0 {
		if p, err = chips.Resolve(p.Name, cores); err != nil {
			return chipJSON{}, err
		}
	}
	return chipJSON{Profile: p, Tuning: p.Tuning(), Detected: found}, nil
}

func printChips(w io.Writer, es []chipJSON) error {
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tALIASES\tCORES\tFAMILY\tGB/S\tSLC\tFUSE\tQ4_LARGE_K\tWIDE_GEMV\tCHAIN\tPREFILL\tNORM_TG\tNOTE")
	hostCores := false
	for _, e := range es {
		p, t := e.Profile, e.Tuning
		cores := strconv.Itoa(p.GPUCores)
		if p.Kind == chips.CPU {
			cores = strconv.Itoa(p.CPUCores)
			if p.CPUCores == 0 {
				cores, hostCores = "*", true
			}
		}
		note := ""
		if p.Unreleased {
			note = "unreleased"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n",
			p.Name, dash(strings.Join(p.Aliases, ",")), cores, p.Family,
			dash(strconv.FormatFloat(p.BandwidthGBs, 'f', -1, 64)), dash(p.SLC.String()),
			onOff(t.FuseWeights), never(t.Q4LargeKThreshold), never(t.WideGEMVThreshold),
			t.ChainChunk, t.PrefillChunk, t.NormTG, note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(buf.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
	if hostCores {
		fmt.Fprintln(w, "\n* a CPU target takes the compiling machine's cores; name cpu-avx2:16 (or --cores 16) to choose.")
	}
	return nil
}

func printRules(w io.Writer, asJSON bool) error {
	rs := chips.Rules()
	if asJSON {
		out := make([]ruleJSON, len(rs))
		for i, r := range rs {
			out[i] = ruleJSON{r.Field, r.When.Text, r.Value, r.Why, r.Pos}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintln(w, "For each field, the first rule whose condition holds sets it.")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tWHEN\tVALUE\tWHY")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\n", r.Field, r.When.Text, r.Value, r.Why)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" || s == "0" {
		return "-"
	}
	return s
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// never writes a threshold, 0 meaning the variant is never used.
func never(n int) string {
	if n == 0 {
		return "never"
	}
	return strconv.Itoa(n)
}
