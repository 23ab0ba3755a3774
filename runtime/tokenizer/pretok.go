package tokenizer

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// The split patterns of the BPE pre-tokenizers, as llama.cpp writes them
// (most come from the models' tokenizer.json; llama.cpp rewrites (?i:...)
// into explicit case classes, which std::regex lacks). A text is cut by the
// first pattern, each piece by the second, and so on; the pieces between
// matches are kept as pieces too.
const (
	patGPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"

	patLlama3 = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
	patQwen2  = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
	patQwen35 = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

	patJais2 = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}"

	patNewline   = "[\r\n]"
	patNewlines  = "[^\\n]+|[\\n]+"
	patNumber    = "\\p{N}"
	patNumbers   = "\\p{N}+"
	patNumber3   = "\\p{N}{1,3}"
	patDigits3   = "[0-9][0-9][0-9]"
	patThousands = "(?=(\\d{3})+(?!\\d))"

	patCJK        = "[一-龥ࠀ-一가-퟿]+"
	patHanKana    = "[一-龥぀-ゟ゠-ヿ]+"
	patDeepSeekV3 = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"

	patPoro = " ?[^(\\s|.,!?…。，、।۔،)]+"

	patTekken          = "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
	patGPT4o           = "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
	patUpperLowerCased = "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
)

// The patterns matched by hand (split_custom.go), keyed by their exact text:
// those llama.cpp matches with code of its own rather than std::regex (and
// whose quirks we must share), and superbpe's digit lookahead, which the
// engine would match in quadratic time.
var customSplitters = map[string]func(t *splitText, start, end int, out []int32) []int32{
	patGPT2: splitGPT2,
	patLlama3: func(t *splitText, s, e int, out []int32) []int32 {
		return splitLlama3Like(t, s, e, out, 3, cLetter)
	},
	patQwen2: func(t *splitText, s, e int, out []int32) []int32 {
		return splitLlama3Like(t, s, e, out, 1, cLetter)
	},
	patQwen35: func(t *splitText, s, e int, out []int32) []int32 {
		return splitLlama3Like(t, s, e, out, 1, cLetter|cMark)
	},
	"\\p{Han}+":                  splitKimiK2,
	"\\p{AFMoE_digits}":          splitDigitGroups,
	"\\d{1,3}(?=(?:\\d{3})*\\b)": splitDigitGroups,
	patNewlines:                  splitNewlines,
	patThousands:                 splitThousands,
}

// preTokenizer is one row of the table: the tokenizer.ggml.pre values it
// covers, how they split text, and the vocabulary settings llama.cpp ties
// to them (FromGGUF applies those; New only reads rules and rawBytes).
type preTokenizer struct {
	names []string
	rules []string
	// rawBytes: pieces stay raw UTF-8 (tokens spell bytes as <0xXX>)
	// instead of GPT-2's byte-to-character encoding.
	rawBytes bool

	ignoreMerges  bool
	keepSpaces    bool // clean_up_tokenization_spaces off
	addBOS        bool
	addSEP        bool
	escapeSpaces  bool
	noBOS         bool // no BOS token unless the file names one
	keepCase      bool // the whitespace model's normalizer does not lowercase
	newlineTokens bool // a piece of newlines only is looked up whole (Gemma 4)
}

// preTokenizers is the table: every tokenizer.ggml.pre value llama.cpp
// accepts for a BPE vocabulary, in its order.
var preTokenizers = []preTokenizer{
	{names: []string{"default"}, rules: []string{"[\\p{P}\\$\\+<=>\\^~\\|]+", patGPT2, patNumbers, patDigits3}},
	{names: []string{"minicpm5"}, rules: []string{patNumber3,
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
		ignoreMerges: true},
	{names: []string{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"},
		rules: []string{patLlama3}, ignoreMerges: true, addBOS: true},
	{names: []string{"deepseek-llm"}, keepSpaces: true, rules: []string{
		patNewline,
		// Latin, Greek, Cyrillic and other cased letters; escaped because
		// editors like to NFC-normalize the literal (ΐ U+1FD3 into U+0390).
		"\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0-\U000118DF\U0001E900-\U0001E943]+",
		"\\s?[!-/:-~！-／：-～‘-‟　-。]+",
		"\\s+$",
		patCJK,
		patNumbers,
	}},
	{names: []string{"deepseek-coder"}, keepSpaces: true, rules: []string{patNewline, "\\s?\\p{L}+", "\\s?\\p{P}+", patCJK, patNumber}},
	{names: []string{"deepseek-v3", "hunyuan-dense", "hy_v4", "joyai-llm"}, keepSpaces: true,
		rules: []string{patNumber3, patHanKana, patDeepSeekV3}},
	{names: []string{"spark2_5"}, keepSpaces: true, rules: []string{patNumber3, patHanKana,
		"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
		patNumber}},
	{names: []string{"youtu"}, keepSpaces: true, ignoreMerges: true, rules: []string{
		"[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
		"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	}},
	{names: []string{"falcon"}, rules: []string{"[\\p{P}\\$\\+<=>\\^~\\|`]+", patGPT2, patDigits3}},
	{names: []string{"mpt"}, rules: []string{patGPT2}},
	{names: []string{"starcoder"}, rules: []string{patNumber, patGPT2}},
	{names: []string{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert"},
		rules: []string{patGPT2}},
	{names: []string{"jais-2"}, rules: []string{patJais2}},
	{names: []string{"gemma4", "granite-embed-multi-311m"}, rules: []string{patNewlines}, rawBytes: true, escapeSpaces: true, newlineTokens: true},
	{names: []string{"sarvam-moe"}, rules: []string{patNewlines}, rawBytes: true, escapeSpaces: true, keepSpaces: true},
	{names: []string{"jina-v1-en", "jina-v2-code", "roberta-bpe"}, rules: []string{patGPT2}, addSEP: true},
	{names: []string{"whitespace"}, rules: []string{"\\S+"}, rawBytes: true, keepCase: true},
	{names: []string{"refact"}, rules: []string{patNumber, patGPT2}},
	{names: []string{"command-r"}, rules: []string{patNumber, patGPT2}, keepSpaces: true},
	{names: []string{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2"}, rules: []string{patQwen2}, keepSpaces: true}, // akunu:not-arch: tokenizer.ggml.pre values
	{names: []string{"qwen35"}, rules: []string{patQwen35}, keepSpaces: true},
	{names: []string{"stablelm2"}, rules: []string{patQwen2}},
	{names: []string{"olmo"}, rules: []string{patGPT2}},
	{names: []string{"dbrx"}, rules: []string{patLlama3}},
	{names: []string{"smaug-bpe"}, rules: []string{patLlama3}},
	{names: []string{"poro-chat"}, rules: []string{patPoro}, keepSpaces: true},
	{names: []string{"glm4", "chatglm-bpe"}, rules: []string{patLlama3}, noBOS: true},
	{names: []string{"viking"}, rules: []string{patPoro, patNumber}, keepSpaces: true},
	{names: []string{"jais"}, rules: []string{patGPT2}},
	{names: []string{"tekken"}, rules: []string{patTekken}, keepSpaces: true, ignoreMerges: true, addBOS: true},
	{names: []string{"smollm"}, rules: []string{patNumber, patGPT2}, keepSpaces: true},
	{names: []string{"codeshell"}, rules: []string{patNumber, patGPT2}},
	{names: []string{"bloom"}, rules: []string{patPoro}},
	{names: []string{"gpt3-finnish"}, rules: []string{patPoro}},
	{names: []string{"exaone"}, rules: []string{patNumber, patGPT2}},
	{names: []string{"exaone4"}, rules: []string{patGPT2}},
	{names: []string{"exaone-moe"}, rules: []string{
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
	}},
	{names: []string{"chameleon"}, addBOS: true, keepSpaces: true, rules: []string{
		"<sentinel:[0-9]+>",
		"(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
		"([\\t\\n]|    |  )",
		patNumber,
		"[\\p{P}!-/:-@\\[-`{-~]",
		patGPT2,
	}},
	{names: []string{"minerva-7b"}, rules: []string{patNumber, patGPT2}},
	{names: []string{"megrez"}, rules: []string{patQwen2}},
	{names: []string{"gpt-4o", "llama4", "kanana2", "talkie"}, rules: []string{patGPT4o}, keepSpaces: true},
	{names: []string{"granite-embed-multi-97m"}, keepSpaces: true, ignoreMerges: true, rules: []string{
		"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	}},
	{names: []string{"tiny_aya", "cohere2moe"}, keepSpaces: true, rules: []string{"\\d{1,3}(?=(?:\\d{3})*\\b)", patUpperLowerCased}},
	{names: []string{"superbpe"}, keepSpaces: true, rules: []string{patNumbers, patThousands}},
	{names: []string{"trillion"}, rules: []string{patGPT2}, keepSpaces: true},
	{names: []string{"granite-docling"}, rules: []string{patGPT2}, keepSpaces: true},
	{names: []string{"bailingmoe", "bailingmoe2", "llada-moe"}, keepSpaces: true, rules: []string{
		"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
	}},
	{names: []string{"seed-coder"}, keepSpaces: true, rules: []string{
		"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	}},
	{names: []string{"hunyuan"}, rules: []string{patQwen2}, keepSpaces: true},
	{names: []string{"kimi-k2"}, rules: []string{"\\p{Han}+"}, keepSpaces: true},
	{names: []string{"ufakzeka"}, keepSpaces: true, rules: []string{
		"[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	}},
	{names: []string{"grok-2"}, rules: []string{patQwen2}, keepSpaces: true},
	{names: []string{"afmoe"}, keepSpaces: true, rules: []string{
		"\\p{AFMoE_digits}",
		"[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+",
		"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
	}},
	{names: []string{"laguna"}, rules: []string{patNewlines, patQwen2}, keepSpaces: true},
	{names: []string{"minimax-m2"}, rules: []string{patGPT4o}, keepSpaces: true},
	{names: []string{"solar-open"}, rules: []string{patQwen2}, keepSpaces: true},
	{names: []string{"mellum2"}, rules: []string{patNumber, patGPT2}},
}

var preByName = func() map[string]*preTokenizer {
	m := map[string]*preTokenizer{}
	for i := range preTokenizers {
		for _, n := range preTokenizers[i].names {
			if _, dup := m[n]; dup {
				panic("tokenizer: pre-tokenizer " + n + " listed twice")
			}
			m[n] = &preTokenizers[i]
		}
	}
	return m
}()

// PreTokenizers returns every tokenizer.ggml.pre value this package knows,
// sorted.
func PreTokenizers() []string {
	names := make([]string, 0, len(preByName))
	for n := range preByName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func lookupPre(name string) (*preTokenizer, error) {
	if name == "" {
		name = "default"
	}
	if p, ok := preByName[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("tokenizer: %s %q: %w (known: %s)", keyPre, name, ErrUnknownPreTokenizer, strings.Join(PreTokenizers(), ", "))
}

// splitRule is a compiled pattern: a custom splitter or a regex.
type splitRule struct {
	custom func(t *splitText, start, end int, out []int32) []int32
	re     *regex
}

var (
	rulesMu    sync.Mutex
	rulesCache = map[string]splitRule{}
)

func compileRule(pat string) (splitRule, error) {
	rulesMu.Lock()
	defer rulesMu.Unlock()
	if r, ok := rulesCache[pat]; ok {
		return r, nil
	}
	var r splitRule
	if f, ok := customSplitters[pat]; ok {
		r.custom = f
	} else {
		re, err := compileRegex(pat)
		if err != nil {
			return splitRule{}, err
		}
		r.re = re
	}
	rulesCache[pat] = r
	return r, nil
}

// preSplit cuts the text into pieces (lengths in codepoints, appended to
// out) by applying each rule to each piece the previous one left.
func preSplit(t *splitText, rules []splitRule, buf []int32) []int32 {
	cur := append(buf[:0], int32(len(t.cps)))
	var next []int32
	for _, r := range rules {
		next = next[:0]
		start := 0
		for _, n := range cur {
			end := start + int(n)
			if r.custom != nil {
				next = r.custom(t, start, end, next)
			} else {
				next = r.re.split(&t.m, t.syms, start, end, next)
			}
			start = end
		}
		cur, next = next, cur
	}
	return cur
}
