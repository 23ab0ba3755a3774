package specs

import (
	"sort"
	"strconv"
)

// OpKind is an operation of the layer program. The set is closed: adding one
// means adding it here, to the op table below, to Program's lowering and to
// the compiler.
type OpKind uint8

const (
	OpInvalid     OpKind = iota
	OpEmbedding          // out = table[token]
	OpRMSNorm            // out = x / rms(x) * weight
	OpLayerNorm          // out = (x - mean) / std * weight + bias
	OpHeadRMSNorm        // rmsnorm over each head_dim slice, one weight for all heads
	OpMatmul             // out = weight · x (+ bias)
	OpAdd                // out = a + b
	OpMul                // out = a * b, elementwise
	OpScale              // out = x * s
	OpSilu               // out = x * sigmoid(x)
	OpGelu               // out = gelu(x), tanh approximation
	OpSoftcap            // out = cap * tanh(x / cap)
	OpRope               // rotary position embedding, per head
	OpAttention          // causal (or sliding-window, or non-causal) attention over the KV cache
	OpSplit              // outs = consecutive slices of x
	OpRoute              // route = the top-k experts of a row's router logits and their gate weights
	OpMatmulID           // out = per slot, the routed expert's matrix applied to x
	OpMoESum             // out = the slots' outputs weighted by the route's gate weights, summed
)

var opKindNames = [...]string{"invalid", "embedding", "rmsnorm", "layernorm", "head_rmsnorm", "matmul",
	"add", "mul", "scale", "silu", "gelu", "softcap", "rope", "attention", "split", "route", "matmul_id", "moe_sum"}

func (k OpKind) String() string {
	if int(k) < len(opKindNames) {
		return opKindNames[k]
	}
	return "op(" + strconv.Itoa(int(k)) + ")"
}

type paramKind uint8

const (
	pkValue  paramKind = iota // an activation: a graph value or a nested op call
	pkTensor                  // a logical tensor name
	pkExpr                    // an expression over hparams and layer
)

// TensorRole says what a tensor is to the program.
type TensorRole uint8

const (
	RoleWeight      TensorRole = iota // a matrix multiplied by an activation
	RoleEmbedding                     // the token embedding table (perhaps also the output matrix)
	RoleNorm                          // a norm's weight
	RoleBias                          // added after a matmul or a layernorm
	RoleRopeFactors                   // RoPE frequency factors
)

var roleNames = [...]string{"weight", "embedding", "norm", "bias", "rope_factors"}

func (r TensorRole) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return "role(" + strconv.Itoa(int(r)) + ")"
}

type opParam struct {
	name     string
	kind     paramKind
	typ      Type       // pkExpr
	def      string     // pkExpr: default expression; "" = required
	optional bool       // pkTensor: may be absent
	role     TensorRole // pkTensor
	defNode  node
}

type opSig struct {
	kind     OpKind
	name     string
	pos      []opParam
	variadic *opParam // split's sizes
	named    []opParam
	doc      string
}

func (s *opSig) outputs(nArgs int) int {
	if s.variadic != nil {
		return nArgs - len(s.pos)
	}
	return 1
}

func (s *opSig) namedParam(name string) *opParam {
	for i := range s.named {
		if s.named[i].name == name {
			return &s.named[i]
		}
	}
	return nil
}

func value(name string) opParam { return opParam{name: name, kind: pkValue} }
func tensor(name string, role TensorRole) opParam {
	return opParam{name: name, kind: pkTensor, role: role}
}
func optTensor(name string, role TensorRole) opParam {
	return opParam{name: name, kind: pkTensor, role: role, optional: true}
}
func num(name string, t Type, def string) opParam {
	return opParam{name: name, kind: pkExpr, typ: t, def: def}
}

// ops is the op table. Defaults name the standard hparams (see hparams.go),
// so a spec that inherits base.yaml rarely spells them out.
var ops = map[string]*opSig{
	"embedding": {kind: OpEmbedding, pos: []opParam{tensor("table", RoleEmbedding)},
		named: []opParam{num("ids", tString, `"tokens"`)},
		doc:   `the rows of table for the current tokens; ids="positions": for their positions (BERT's absolute position embeddings), ids="zeros": row 0 for every token (BERT's token type "sentence A")`},
	"rmsnorm": {kind: OpRMSNorm, pos: []opParam{value("x"), tensor("weight", RoleNorm)},
		named: []opParam{num("eps", tFloat, "norm_eps")},
		doc:   "x / sqrt(mean(x²) + eps) * weight"},
	"layernorm": {kind: OpLayerNorm, pos: []opParam{value("x"), tensor("weight", RoleNorm)},
		named: []opParam{optTensor("bias", RoleBias), num("eps", tFloat, "norm_eps")},
		doc:   "(x - mean(x)) / sqrt(var(x) + eps) * weight + bias"},
	"head_rmsnorm": {kind: OpHeadRMSNorm, pos: []opParam{value("x"), tensor("weight", RoleNorm)},
		named: []opParam{num("eps", tFloat, "norm_eps"), num("head_dim", tInt, "head_dim")},
		doc:   "rmsnorm of each head_dim slice of x, all heads sharing weight [head_dim]"},
	"matmul": {kind: OpMatmul, pos: []opParam{value("x"), tensor("weight", RoleWeight)},
		named: []opParam{optTensor("bias", RoleBias)},
		doc:   "weight [in, out] applied to x [in], plus bias [out] when present"},
	"add":  {kind: OpAdd, pos: []opParam{value("a"), value("b")}, doc: "a + b"},
	"mul":  {kind: OpMul, pos: []opParam{value("a"), value("b")}, doc: "a * b, elementwise"},
	"silu": {kind: OpSilu, pos: []opParam{value("x")}, doc: "x * sigmoid(x)"},
	"gelu": {kind: OpGelu, pos: []opParam{value("x")}, doc: "gelu(x), tanh approximation"},
	"scale": {kind: OpScale, pos: []opParam{value("x"), num("s", tFloat, "")},
		doc: "x * s"},
	"softcap": {kind: OpSoftcap, pos: []opParam{value("x"), num("cap", tFloat, "")},
		doc: "cap * tanh(x / cap)"},
	"rope": {kind: OpRope, pos: []opParam{value("x")},
		named: []opParam{
			num("base", tFloat, "rope_base"),
			num("freq_scale", tFloat, "rope_freq_scale"),
			num("dim", tInt, "rope_dim"),
			num("head_dim", tInt, "head_dim"),
			optTensor("factors", RoleRopeFactors),
			optTensor("long_factors", RoleRopeFactors),
		},
		doc: "rotate the first dim values of each head_dim slice by position; the style is the spec's rope_style"},
	"attention": {kind: OpAttention, pos: []opParam{value("q"), value("k"), value("v")},
		named: []opParam{
			num("scale", tFloat, "attn_scale"),
			num("softcap", tFloat, "0.0"),
			num("window", tInt, "0"),
			num("head_dim", tInt, "head_dim"),
			num("head_dim_v", tInt, "head_dim_v"),
			num("causal", tBool, "true"),
		},
		doc: "softmax(softcap(scale · q·kᵀ)) · v over the cached k, v of this layer; window > 0 masks keys further back than window positions; causal=false lets every token of an input see all of the input (encoders)"},
	"route": {kind: OpRoute, pos: []opParam{value("logits"), num("k", tInt, "")},
		named: []opParam{num("norm", tBool, "true")},
		doc:   "the k largest of softmax(logits) (the experts a row is routed to) and their probabilities, renormalized to sum to 1 when norm; a route value, read only by matmul_id and moe_sum"},
	"matmul_id": {kind: OpMatmulID, pos: []opParam{value("x"), tensor("weight", RoleWeight), value("route")},
		doc: "for each of the route's k slots, the routed expert's matrix of weight [in, out, experts] applied to x [in] (or, when x is k·in wide, to the slot's part of it): k·out values"},
	"moe_sum": {kind: OpMoESum, pos: []opParam{value("y"), value("route")},
		doc: "the route's k slots of y [k·n] weighted by the route's gate weights and summed: n values"},
	"split": {kind: OpSplit, pos: []opParam{value("x")}, variadic: &opParam{name: "sizes", kind: pkExpr, typ: tInt},
		doc: "consecutive slices of x, one output per size"},
}

// opNames lists the op names, for suggestions.
func opNames() []string {
	out := make([]string, 0, len(ops))
	for n := range ops {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func init() {
	for _, s := range ops {
		s.name = s.kind.String()
		for i := range s.named {
			p := &s.named[i]
			if p.kind == pkExpr && p.def != "" {
				n, err := parseExpr(posMap{file: "<op default>", line: 1, col: 1}, "", p.def)
				if err != nil {
					panic("specs: bad op default " + p.def + ": " + err.Error())
				}
				p.defNode = n
			}
		}
	}
}
