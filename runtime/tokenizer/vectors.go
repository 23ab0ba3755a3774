package tokenizer

import (
	"strconv"
	"strings"
)

// VectorSeparator separates the inputs of llama.cpp's tokenizer test
// vectors (NAME.gguf.inp).
const VectorSeparator = "\n__ggml_vocab_test__\n"

// SplitVectorInputs splits a .inp file into its inputs. Every input is
// followed by the separator except perhaps the last, which then runs to the
// end of the file; nothing follows the final separator.
func SplitVectorInputs(data string) []string {
	var out []string
	for pos := 0; pos < len(data); {
		i := strings.Index(data[pos:], VectorSeparator)
		if i < 0 {
			out = append(out, data[pos:])
			break
		}
		out = append(out, data[pos:pos+i])
		pos += i + len(VectorSeparator)
	}
	return out
}

// FormatVectorLine writes ids as a line of a .out file: each id preceded by
// a space, no newline.
func FormatVectorLine(ids []int32) string {
	b := make([]byte, 0, len(ids)*7)
	for _, id := range ids {
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return string(b)
}
