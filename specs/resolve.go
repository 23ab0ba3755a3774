package specs

import (
	"errors"
	"fmt"
	"strings"
)

// maxLayers bounds the layer count a model may claim before anything is
// allocated per layer (llama.cpp's LLAMA_MAX_LAYERS is 512).
const maxLayers = 4096

// resolver evaluates the hparams of one spec for one model, each once.
type resolver struct {
	evaluator
	layers   int
	global   map[string]Value
	perLayer map[string]map[int]Value
	failed   map[string]error // hparams that failed, so each error is reported once
}

// Resolve reads a model's hyperparameters. Every problem (a missing key, a
// value of the wrong type, a requirement the model does not meet) is
// reported, each naming the key and the hparam.
func (a *Arch) Resolve(md Metadata) (*HParams, error) {
	if a.Abstract {
		return nil, &Error{Pos: Pos{File: a.File}, Kind: ErrInvalid, Msg: fmt.Sprintf("spec %s is abstract: it compiles no model", a.Name)}
	}
	prefix := a.Architectures[0]
	if v, ok := md.Lookup("general.architecture"); ok && v.Kind == KindString && v.Str != "" {
		prefix = v.Str
	}
	r := &resolver{
		evaluator: evaluator{a: a, md: md, prefix: prefix},
		global:    map[string]Value{},
		perLayer:  map[string]map[int]Value{},
		failed:    map[string]error{},
	}
	r.evaluator.hparam = r.hparam
	var c errs

	lv, err := r.hparam("layers", -1)
	if err != nil {
		report(&c, err)
		return nil, c.err()
	}
	if lv.Int <= 0 || lv.Int > maxLayers {
		d := a.hp["layers"].decl
		c.add(ErrBadValue, d.pos, d.path, "%d layers: want 1..%d", lv.Int, maxLayers)
		return nil, c.err()
	}
	r.layers = int(lv.Int)

	hp := &HParams{
		Arch: prefix, Spec: a.Name, RopeStyle: a.RopeStyle(),
		Values: map[string]Value{}, LayerValues: map[string][]Value{}, present: map[string]bool{},
	}
	for _, d := range a.hparams {
		info := a.hp[d.name]
		if !info.perLayer {
			v, err := r.hparam(d.name, -1)
			if err != nil {
				report(&c, err)
				continue
			}
			hp.Values[d.name] = v
			continue
		}
		vals := make([]Value, r.layers)
		for l := range vals {
			v, err := r.hparam(d.name, l)
			if err != nil {
				report(&c, err)
				break
			}
			vals[l] = v
		}
		hp.LayerValues[d.name] = vals
	}
	if !c.empty() {
		return nil, c.err()
	}
	for _, req := range a.require {
		r.checkRequirement(req, &c)
	}
	if !c.empty() {
		return nil, c.err()
	}
	fillStandard(hp)
	r.notePresent(hp)

	// The program is built once here: it checks the model's shapes against
	// the graph, and it knows which norm the layers use and whether the
	// output matrix is the embedding table.
	prog, err := a.Program(hp)
	if err != nil {
		return nil, err
	}
	hp.NormKind, hp.TiedOutput = prog.normKind(), prog.tiedOutput()
	return hp, nil
}

// hparam evaluates a named value. Errors come back as *Error naming the
// hparam, never as a missing key, so that an enclosing ?? cannot hide that a
// value the spec requires is absent.
func (r *resolver) hparam(name string, layer int) (Value, error) {
	info := r.a.hp[name]
	if info == nil {
		return Value{}, fmt.Errorf("specs: hparam %q not declared", name) // unreachable after check
	}
	if !info.perLayer {
		layer = -1
		if v, ok := r.global[name]; ok {
			return v, nil
		}
	} else if v, ok := r.perLayer[name][layer]; ok {
		return v, nil
	}
	if err, failed := r.failed[name]; failed {
		return Value{}, &quiet{err}
	}
	v, err := r.compute(info, layer)
	if err != nil {
		r.failed[name] = err
		return Value{}, err
	}
	if info.perLayer {
		if r.perLayer[name] == nil {
			r.perLayer[name] = map[int]Value{}
		}
		r.perLayer[name][layer] = v
	} else {
		r.global[name] = v
	}
	return v, nil
}

// quiet marks an error already reported through another hparam.
type quiet struct{ error }

// report adds an evaluation error unless it was reported already.
func report(c *errs, err error) {
	if _, ok := err.(*quiet); ok {
		return
	}
	c.merge(err)
}

func (r *resolver) compute(info *hpInfo, layer int) (Value, error) {
	d := info.decl
	where := d.path
	if layer >= 0 {
		where = fmt.Sprintf("%s (layer %d)", d.path, layer)
	}
	wrap := func(err error, pos Pos) error {
		var q *quiet
		if errors.As(err, &q) {
			return err
		}
		var e *Error
		if errors.As(err, &e) {
			return err
		}
		switch err := err.(type) {
		case *missingKey:
			return &Error{Pos: err.pos, Path: where, Kind: ErrMissingKey, Msg: fmt.Sprintf("the model has no metadata key %q", err.key)}
		case *evalErr:
			return &Error{Pos: err.pos, Path: where, Kind: err.kind, Msg: err.msg}
		}
		return &Error{Pos: pos, Path: where, Kind: ErrBadValue, Msg: err.Error()}
	}
	if d.key != "" {
		full := r.fullKey(d.key, d.abs)
		v, ok := r.md.Lookup(full)
		if ok {
			if d.lenOf {
				if v.Kind != KindArray {
					return Value{}, &Error{Pos: d.keyPos, Path: where, Kind: ErrBadValue, Msg: fmt.Sprintf("%s is %s, not an array", full, v.Type())}
				}
				return IntValue(int64(v.Len)), nil
			}
			cv, err := conformMeta(full, v, info.typ, d.keyPos)
			if err != nil {
				return Value{}, wrap(err, d.keyPos)
			}
			return cv, nil
		}
		if d.def == nil {
			return Value{}, &Error{Pos: d.keyPos, Path: where, Kind: ErrMissingKey,
				Msg: fmt.Sprintf("the model has no metadata key %q, and %s has no default", full, d.name)}
		}
		v, err := r.eval(d.def, layer)
		if err != nil {
			return Value{}, wrap(err, d.def.at())
		}
		cv, _ := convert(v, info.typ)
		return cv, nil
	}
	v, err := r.eval(d.expr, layer)
	if err != nil {
		return Value{}, wrap(err, d.expr.at())
	}
	cv, _ := convert(v, info.typ)
	return cv, nil
}

func (r *resolver) checkRequirement(req *requireDecl, c *errs) {
	var bad []int
	layers := []int{-1}
	if ti := exprDependsOnLayer(r.a, req.check); ti {
		layers = layers[:0]
		for l := 0; l < r.layers; l++ {
			layers = append(layers, l)
		}
	}
	for _, l := range layers {
		v, err := r.eval(req.check, l)
		if err != nil {
			var q *quiet
			if errors.As(err, &q) {
				return
			}
			if mk, ok := err.(*missingKey); ok {
				c.add(ErrMissingKey, mk.pos, req.path, "the model has no metadata key %q", mk.key)
				return
			}
			c.merge(err)
			return
		}
		if !v.Bool {
			bad = append(bad, l)
		}
	}
	if len(bad) == 0 {
		return
	}
	msg := req.message
	if bad[0] >= 0 {
		msg += fmt.Sprintf(" (layers %s)", intList(bad))
	}
	c.add(ErrConstraint, req.check.at(), req.path, "%s: %s is false", msg, exprString(req.check))
}

func intList(xs []int) string {
	parts := make([]string, 0, len(xs))
	for i, x := range xs {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("… %d more", len(xs)-i))
			break
		}
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ", ")
}

// exprDependsOnLayer reports whether an expression reads `layer` or a
// per-layer hparam.
func exprDependsOnLayer(a *Arch, n node) bool {
	switch n := n.(type) {
	case *nameNode:
		if n.name == "layer" {
			return true
		}
		info := a.hp[n.name]
		return info != nil && info.perLayer
	case *unaryNode:
		return exprDependsOnLayer(a, n.x)
	case *binNode:
		return exprDependsOnLayer(a, n.l) || exprDependsOnLayer(a, n.r)
	case *callNode:
		for _, x := range n.args {
			if exprDependsOnLayer(a, x) {
				return true
			}
		}
	}
	return false
}

// fillStandard copies the standard named values into HParams' fields and
// applies the conventions for what a spec leaves out.
func fillStandard(hp *HParams) {
	for _, s := range stdHParams {
		if v, ok := hp.Values[s.name]; ok && s.set != nil {
			s.set(hp, v)
		}
	}
	if hp.HeadDimV == 0 {
		hp.HeadDimV = hp.HeadDim
	}
	if hp.RopeDim == 0 {
		hp.RopeDim = hp.HeadDim
	}
	if _, ok := hp.Values["embed_scale"]; !ok {
		hp.EmbedScale = 1
	}
	rs := &hp.RopeScaling
	if rs.Type == "" || (rs.Type == ScalingLinear && (rs.Factor == 0 || rs.Factor == 1)) {
		rs.Type = ScalingNone
	}
	if rs.Factor == 0 {
		rs.Factor = 1
	}
	if rs.OrigCtx == 0 {
		rs.OrigCtx = hp.CtxTrain
	}
	hp.SlidingLayers = make([]bool, hp.Layers)
	if vs, ok := hp.LayerValues["sliding"]; ok {
		for l, v := range vs {
			hp.SlidingLayers[l] = v.Bool
		}
	} else if v, ok := hp.Values["sliding"]; ok {
		for l := range hp.SlidingLayers {
			hp.SlidingLayers[l] = v.Bool
		}
	}
	if hp.SlidingWindow == 0 {
		for l := range hp.SlidingLayers {
			hp.SlidingLayers[l] = false
		}
	}
}

// notePresent records which optional tensors the model has.
func (r *resolver) notePresent(hp *HParams) {
	for _, t := range r.a.tensors {
		if !t.optional || !r.a.used(t.logical) {
			continue
		}
		if !t.perLayer {
			name := t.pattern
			hp.present[name] = r.md.HasTensor(name)
			continue
		}
		for l := 0; l < r.layers; l++ {
			name := tensorName(t.pattern, l)
			hp.present[name] = r.md.HasTensor(name)
		}
	}
}

func tensorName(pattern string, layer int) string {
	return strings.Replace(pattern, "{layer}", fmt.Sprint(layer), 1)
}
