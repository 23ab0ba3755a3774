package metal

import (
	"encoding/binary"
	"fmt"

	"github.com/akunu-dev/akunu/plans"
)

// MTLDataType values of the function-constant types a plan uses (Metal's
// MTLDataType enum, MTLArgument.h).
const (
	mtlDataTypeFloat = 3
	mtlDataTypeInt   = 29
	mtlDataTypeUInt  = 33
	mtlDataTypeBool  = 53
)

// constantValue is one function constant as setConstantValue:type:atIndex:
// takes it: the MTLDataType and the value's bytes as the type stores them
// (bool: one byte; int, uint, float: four, little-endian).
type constantValue struct {
	index    uint32
	dataType uint64
	bytes    [4]byte
	size     int
}

// encodeConstant turns a plan constant (raw 32 bits, plans.Constant) into
// what Metal reads through the value pointer.
func encodeConstant(c plans.Constant) (constantValue, error) {
	v := constantValue{index: c.Index}
	switch c.Type {
	case plans.ConstBool:
		if c.Value > 1 {
			return v, fmt.Errorf("constant %v: a bool is 0 or 1", c)
		}
		v.dataType, v.size = mtlDataTypeBool, 1
		v.bytes[0] = byte(c.Value)
		return v, nil
	case plans.ConstI32:
		v.dataType = mtlDataTypeInt
	case plans.ConstU32:
		v.dataType = mtlDataTypeUInt
	case plans.ConstF32:
		v.dataType = mtlDataTypeFloat
	default:
		return v, fmt.Errorf("constant %d: type %v has no MTLDataType", c.Index, c.Type)
	}
	v.size = 4
	binary.LittleEndian.PutUint32(v.bytes[:], c.Value)
	return v, nil
}

// encodeConstants encodes a pipeline's constants, refusing an index given
// twice (Metal would keep the last silently). Its errors start with the
// pipeline's key (Bind puts the command before them).
func encodeConstants(p plans.Pipeline) ([]constantValue, error) {
	out := make([]constantValue, 0, len(p.Constants))
	seen := map[uint32]bool{}
	for _, c := range p.Constants {
		if seen[c.Index] {
			return nil, fmt.Errorf("pipeline %s: constant index %d given twice", pipelineKey(p), c.Index)
		}
		seen[c.Index] = true
		v, err := encodeConstant(c)
		if err != nil {
			return nil, fmt.Errorf("pipeline %s: %w", pipelineKey(p), err)
		}
		out = append(out, v)
	}
	return out, nil
}

// pipelineKey is the pipeline cache's key: the plan's stored key when it
// has one (Validate holds it to CacheKey), else the key derived.
func pipelineKey(p plans.Pipeline) string {
	if p.Key != "" {
		return p.Key
	}
	return plans.CacheKey(p.Kernel, p.Constants)
}
