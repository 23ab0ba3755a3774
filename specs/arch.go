package specs

// Arch is one checked architecture spec, with its inheritance applied. It is
// immutable once loaded; every method may be called concurrently.
type Arch struct {
	Name          string   // the spec's name: its file's stem
	File          string   // the file it was loaded from, as errors print it
	Architectures []string // the general.architecture values it compiles
	Doc           string
	Abstract      bool     // a base for other specs; matches no model
	Chain         []string // the spec, then its ancestors
	// ChatTemplate names the built-in chat format (runtime/chat: chatml,
	// llama3, gemma) for models of the family that ship no
	// tokenizer.chat_template; "" when the family has no single format.
	ChatTemplate string
	// Output is what the model computes: OutputLogits (a language model:
	// the epilogue defines logits) or OutputEmbedding (an encoder: its
	// last x, pooled; no logits, no generation).
	Output Output

	archPos      Pos
	ropeStyle    string
	ropeStylePos Pos
	outputPos    Pos
	hparams      []*hparamDecl
	require      []*requireDecl
	tensors      []*tensorDecl
	prologue     []*stmt
	layer        []*block
	epilogue     []*stmt
	digest       string

	// Filled by check.
	hp       map[string]*hpInfo
	tensorIx map[string]*tensorDecl
	roles    map[string]TensorRole
}

// Output is what a spec's program computes.
type Output string

const (
	OutputLogits    Output = "logits"
	OutputEmbedding Output = "embedding"
)

// RopeStyle returns the spec's RoPE style.
func (a *Arch) RopeStyle() RopeStyle { return RopeStyle(a.ropeStyle) }

// Digest is a SHA-256 over the spec's file and its ancestors' files: what a
// plan records as "the specs used".
func (a *Arch) Digest() string { return a.digest }

// Blocks lists the names of the layer program's blocks, in order.
func (a *Arch) Blocks() []string {
	out := make([]string, len(a.layer))
	for i, b := range a.layer {
		out[i] = b.name
	}
	return out
}

// HParamKey says how one hparam is read from metadata, so that a
// synthesizer can write the metadata that gives chosen values.
type HParamKey struct {
	Name string // the hparam, e.g. head_dim
	Type Type
	// Key is the metadata key it reads, "" for a derived value. A Relative
	// key is prefixed with the architecture: use FullKey.
	Key      string
	Relative bool
	Len      bool   // the value is the length of the array at Key
	Default  string // the default expression when the key is absent, "" if none
	Expr     string // for a derived value: its expression
	PerLayer bool   // depends on the layer
	Standard bool   // one of the standard names that HParams has a field for
	Doc      string
}

// Required reports whether a model must carry the key.
func (k HParamKey) Required() bool { return k.Key != "" && k.Default == "" }

// FullKey returns the key as stored in a file of the given architecture.
func (k HParamKey) FullKey(arch string) string {
	if k.Relative {
		return arch + "." + k.Key
	}
	return k.Key
}

// HParamKeys lists every hparam of the spec in declaration order.
func (a *Arch) HParamKeys() []HParamKey {
	out := make([]HParamKey, 0, len(a.hparams))
	for _, d := range a.hparams {
		info := a.hp[d.name]
		k := HParamKey{Name: d.name, Key: d.key, Relative: d.key != "" && !d.abs, Len: d.lenOf, Doc: d.doc}
		if info != nil {
			k.Type, k.PerLayer = info.typ, info.perLayer
		}
		if d.def != nil {
			k.Default = exprString(d.def)
		}
		if d.expr != nil {
			k.Expr = exprString(d.expr)
		}
		_, k.Standard = stdHParamByName(d.name)
		out = append(out, k)
	}
	return out
}

// MetadataFor returns the metadata (full key → value) that makes Resolve
// give the chosen values, for a model of general.architecture arch. Values
// are by hparam name; an hparam that reads no key (a derived one) cannot be
// chosen. Array-length hparams give an array of that many empty elements of
// the key's element kind (a synthesizer replaces it with real contents).
// general.architecture itself is included.
func (a *Arch) MetadataFor(arch string, values map[string]Value) (map[string]Value, error) {
	var c errs
	md := map[string]Value{"general.architecture": StringValue(arch)}
	byName := map[string]*hparamDecl{}
	for _, d := range a.hparams {
		byName[d.name] = d
	}
	for _, name := range sortedKeys(values) {
		v := values[name]
		d, ok := byName[name]
		if !ok {
			c.add(ErrUnknownName, Pos{File: a.File}, "hparams", "unknown hparam %q%s", name, suggest(name, sortedKeys(byName)))
			continue
		}
		if d.key == "" {
			c.add(ErrInvalid, d.pos, d.path, "%s is derived (%s); it cannot be set", name, exprString(d.expr))
			continue
		}
		info := a.hp[name]
		key := HParamKey{Key: d.key, Relative: !d.abs}.FullKey(arch)
		if d.lenOf {
			if v.Kind != KindInt || v.Int < 0 {
				c.add(ErrType, d.pos, d.path, "%s is an array length: give a non-negative int, not %s", name, v)
				continue
			}
			elem := info.key.Type.Elem
			elems := make([]Value, v.Int)
			for i := range elems {
				elems[i] = Value{Kind: elem}
			}
			md[key] = ArrayValue(elem, int(v.Int), elems)
			continue
		}
		want := info.key.Type
		if want.Kind == KindInvalid {
			want = info.typ
		}
		cv, ok := convert(v, want)
		if !ok {
			// A float-typed hparam reading an int key, or the reverse, is
			// written in the key's own type when the value allows.
			if want == tInt && v.Kind == KindFloat && v.Float == float64(int64(v.Float)) {
				cv, ok = IntValue(int64(v.Float)), true
			}
		}
		if !ok {
			c.add(ErrType, d.pos, d.path, "%s: key %s is %s, value %s is %s", name, key, want, v, v.Type())
			continue
		}
		md[key] = cv
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	return md, nil
}
