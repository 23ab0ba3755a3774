package main

import (
	"fmt"

	"github.com/akunu-dev/akunu/internal/cli"
	"github.com/akunu-dev/akunu/runtime"
)

// specFlags are speculative decoding's flags (run, chat, bench, serve).
type specFlags struct {
	mode, draft, draftModel *string
	max, min, vocab         *int
}

func addSpecFlags(fs interface {
	String(string, string, string) *string
	Int(string, int, string) *int
}) specFlags {
	return specFlags{
		mode:       fs.String("spec", "", "speculative decoding: ngram (prompt lookup) or draft (a smaller model, --draft); default none"),
		draft:      fs.String("draft", "", "with --spec draft: the draft model's plan (the target's vocabulary, smaller weights)"),
		draftModel: fs.String("draft-model", "", "the draft plan's GGUF file (default: the plan's recorded file name next to it)"),
		max:        fs.Int("draft-max", runtime.DefaultDraftMax, "most drafts a verify pass checks, in [1, 31]; fewer when the acceptance rate is low"),
		min:        fs.Int("draft-min", 1, "fewest drafts worth a verify pass, in [1, --draft-max]"),
		vocab: fs.Int("draft-vocab", 0, "with --spec draft: the draft computes the logits of the token ids below N, "+
			"the conversation's tokens and the end-of-generation tokens only (a large vocabulary's LM head is much of a small model's "+
			"reading; 32768 cut the drafting of a Qwen3-0.6B-shape draft by 17-21% on a 2-core box, a draft step by 15-20% on a 16-core host; "+
			"ids above it are certain rejections); 0: every token"),
	}
}

// check refuses values that mean nothing, and flags without --spec.
func (f specFlags) check() error {
	switch *f.mode {
	case "", "ngram", "draft":
	default:
		return badFlag("spec", *f.mode, "want ngram or draft")
	}
	if err := firstError(intIn("draft-max", *f.max, 1, 31), intIn("draft-min", *f.min, 1, max(*f.max, 1)), intIn("draft-vocab", *f.vocab, 0, 1<<30)); err != nil {
		return err
	}
	switch {
	case *f.mode == "draft" && *f.draft == "":
		return cli.FlagError{Flag: "spec", Msg: "draft needs --draft PLAN, the draft model's plan"}
	case *f.mode != "draft" && *f.draft != "":
		return cli.FlagError{Flag: "draft", Msg: fmt.Sprintf("%s: a draft plan is used with --spec draft only", *f.draft)}
	case *f.vocab != 0 && *f.mode != "draft":
		return cli.FlagError{Flag: "draft-vocab", Msg: fmt.Sprintf("%d: the draft model's shortlist is used with --spec draft only", *f.vocab)}
	case *f.draftModel != "" && *f.draft == "":
		return cli.FlagError{Flag: "draft-model", Msg: fmt.Sprintf("%s: the GGUF file of --draft, which is not given", *f.draftModel)}
	}
	return nil
}

// speculator makes the drafters of one target model: one per session (a
// draft model's drafter keeps a session of its own on the draft model,
// loaded once on the target's backend).
type speculator struct {
	f     specFlags
	draft *runtime.Model
}

// newSpeculator loads what --spec needs for target with seqs sessions
// (nil when --spec is not given).
func (f specFlags) newSpeculator(target *runtime.Model, seqs int) (*speculator, error) {
	if *f.mode == "" {
		return nil, nil
	}
	sp := &speculator{f: f}
	if *f.mode == "draft" {
		d, err := runtime.Load(*f.draft, runtime.Options{Model: *f.draftModel, Backend: target.Backend(), Seqs: seqs})
		if err != nil {
			return nil, fmt.Errorf("--draft %s: %w", *f.draft, err)
		}
		if err := runtime.CheckDraftVocab(target, d); err != nil {
			d.Close()
			return nil, fmt.Errorf("--draft %s: %w", *f.draft, err)
		}
		sp.draft = d
	}
	return sp, nil
}

// speculation is a fresh Speculation for one session, and what closes it.
func (sp *speculator) speculation(target *runtime.Model) (*runtime.Speculation, func(), error) {
	if sp == nil {
		return nil, func() {}, nil
	}
	o := &runtime.Speculation{Max: *sp.f.max, Min: *sp.f.min}
	if sp.draft == nil {
		o.Drafter = &runtime.NGram{}
		return o, func() {}, nil
	}
	d, err := runtime.NewModelDrafter(target, sp.draft, *sp.f.max)
	if err != nil {
		return nil, nil, err
	}
	d.SetShortlist(*sp.f.vocab)
	o.Drafter = d
	return o, d.Close, nil
}

// close frees the draft model (its backend is the target's).
func (sp *speculator) close() {
	if sp != nil && sp.draft != nil {
		sp.draft.Close()
	}
}

// specLine reports a generation's speculation (empty without it).
func specLine(o *runtime.Speculation, r *runtime.Result) string {
	if o == nil {
		return ""
	}
	st := r.Spec
	return fmt.Sprintf("; speculation: %d passes, %d of %d drafts accepted (%.0f%%), %.2f tokens a pass, %d steps without drafts",
		st.Passes, st.Accepted, st.Drafted, 100*st.AcceptRate(), st.TokensPerPass(), st.Plain)
}
