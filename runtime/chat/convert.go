package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// fromGo converts Context data into template values, once, before rendering.
// What it accepts: nil, bool, Go's integer and float types, string,
// json.Number, json.RawMessage (decoded with its key order kept, which is how
// a caller passes tool schemas whose order tojson must reproduce), Message,
// slices and arrays of any of these, and maps with string keys (their keys
// sorted, since Go maps have no order). Anything else is refused: a template
// never sees a Go pointer, struct or function.
func fromGo(v any, depth int) (any, error) {
	if depth > maxValueDepth {
		return nil, fmt.Errorf("value nested more than %d levels deep", maxValueDepth)
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return x, nil
	case string:
		return x, nil
	case int:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int64:
		return x, nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint:
		if uint64(x) > math.MaxInt64 {
			return nil, fmt.Errorf("integer %d does not fit in 64 bits", x)
		}
		return int64(x), nil
	case uint64:
		if x > math.MaxInt64 {
			return nil, fmt.Errorf("integer %d does not fit in 64 bits", x)
		}
		return int64(x), nil
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	case json.Number:
		return jsonNumber(string(x))
	case json.RawMessage:
		return decodeJSON(x)
	case Message:
		return x.value(depth)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String: // named string types (type Role string)
		return rv.String(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.Float32, reflect.Float64:
		return rv.Float(), nil
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil, nil
		}
		out := make([]any, rv.Len())
		for i := range out {
			e, err := fromGo(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = e
		}
		return out, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map keys must be strings, not %s", rv.Type().Key())
		}
		if rv.IsNil() {
			return nil, nil
		}
		keys := make([]string, 0, rv.Len())
		for _, k := range rv.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		d := newDict(len(keys))
		for _, k := range keys {
			e, err := fromGo(rv.MapIndex(reflect.ValueOf(k).Convert(rv.Type().Key())).Interface(), depth+1)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", k, err)
			}
			d.set(k, e)
		}
		return d, nil
	}
	return nil, fmt.Errorf("values of type %T cannot be passed to a template", v)
}

func jsonNumber(s string) (any, error) {
	if !strings.ContainsAny(s, ".eE") {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !isRangeErr(err) {
		return nil, fmt.Errorf("bad JSON number %q", s)
	}
	return f, nil
}

// decodeJSON decodes one JSON value keeping the order of object keys.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, fmt.Errorf("JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("JSON: data after the value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxValueDepth {
		return nil, fmt.Errorf("nested more than %d levels deep", maxValueDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			out := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			_, err := dec.Token()
			return out, err
		case '{':
			d := newDict(4)
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				d.set(kt.(string), v)
			}
			_, err := dec.Token()
			return d, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		return jsonNumber(string(t))
	case string, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}
