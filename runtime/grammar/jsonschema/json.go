package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// node is a JSON value that keeps its object keys in order (a schema's
// properties are generated in the order written).
type node struct {
	kind nodeKind
	obj  []kv
	arr  []*node
	s    string
	n    json.Number
	b    bool
}

type kv struct {
	k string
	v *node
}

type nodeKind uint8

const (
	kNull nodeKind = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

func (n *node) kindName() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[n.kind]
}

func (n *node) get(k string) *node {
	if n == nil || n.kind != kObject {
		return nil
	}
	for _, e := range n.obj {
		if e.k == k {
			return e.v
		}
	}
	return nil
}

func (n *node) num() (float64, bool) {
	if n.kind != kNumber {
		return 0, false
	}
	f, err := n.n.Float64()
	return f, err == nil
}

// compact is the value as compact JSON.
func (n *node) compact() string {
	var b bytes.Buffer
	n.write(&b)
	return b.String()
}

func (n *node) write(b *bytes.Buffer) {
	switch n.kind {
	case kNull:
		b.WriteString("null")
	case kBool:
		b.WriteString(strconv.FormatBool(n.b))
	case kNumber:
		b.WriteString(n.n.String())
	case kString:
		s, _ := json.Marshal(n.s)
		b.Write(s)
	case kArray:
		b.WriteByte('[')
		for i, e := range n.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			e.write(b)
		}
		b.WriteByte(']')
	case kObject:
		b.WriteByte('{')
		for i, e := range n.obj {
			if i > 0 {
				b.WriteByte(',')
			}
			s, _ := json.Marshal(e.k)
			b.Write(s)
			b.WriteByte(':')
			e.v.write(b)
		}
		b.WriteByte('}')
	}
}

const maxDepth = 256

// parseJSON reads one JSON value, keeping key order; errors carry the
// line and column.
func parseJSON(data []byte) (*node, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	n, err := readValue(d, 0)
	if err == nil {
		if _, e := d.Token(); e != io.EOF {
			err = fmt.Errorf("unexpected data after the schema")
		}
	}
	if err != nil {
		off := int(d.InputOffset())
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = int(se.Offset)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err, off = errors.New("unexpected end of the schema"), len(data)
		}
		line, col := 1, 1
		for _, c := range data[:min(off, len(data))] {
			if c == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		return nil, &Error{Line: line, Col: col, Msg: "malformed JSON: " + err.Error()}
	}
	return n, nil
}

func readValue(d *json.Decoder, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested more than %d deep", maxDepth)
	}
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch v := t.(type) {
	case nil:
		return &node{kind: kNull}, nil
	case bool:
		return &node{kind: kBool, b: v}, nil
	case json.Number:
		return &node{kind: kNumber, n: v}, nil
	case string:
		return &node{kind: kString, s: v}, nil
	case json.Delim:
		switch v {
		case '[':
			n := &node{kind: kArray}
			for d.More() {
				e, err := readValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				n.arr = append(n.arr, e)
			}
			if _, err := d.Token(); err != nil {
				return nil, err
			}
			return n, nil
		case '{':
			n := &node{kind: kObject}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("expected a key")
				}
				for _, e := range n.obj {
					if e.k == k {
						return nil, fmt.Errorf("key %q appears twice", k)
					}
				}
				v, err := readValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				n.obj = append(n.obj, kv{k, v})
			}
			if _, err := d.Token(); err != nil {
				return nil, err
			}
			return n, nil
		}
	}
	return nil, fmt.Errorf("unexpected %v", t)
}
