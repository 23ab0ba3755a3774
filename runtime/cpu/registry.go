package cpu

import "github.com/akunu-dev/akunu/kernels"

// binders maps every catalog kernel to the binder of its family. The CPU
// implements the whole catalog, F16 and F32 kernels alike, so that it can
// replay a plan compiled for any target.
var binders = func() map[string]binder {
	byOp := map[kernels.Op]binder{
		kernels.OpGEMV:                  bindGEMV,
		kernels.OpGEMM:                  bindGEMM,
		kernels.OpEmbedding:             bindEmbedding,
		kernels.OpRMSNorm:               bindNorm,
		kernels.OpLayerNorm:             bindNorm,
		kernels.OpHeadRMSNorm:           bindNorm,
		kernels.OpRoPE:                  bindRoPE,
		kernels.OpRoPEQKVWrite:          bindRoPEKV,
		kernels.OpHeadNormRoPEKVWrite:   bindRoPEKV,
		kernels.OpAttentionDecode:       bindAttention,
		kernels.OpAttentionDecodeReduce: bindAttnReduce,
		kernels.OpAttentionPrefill:      bindAttention,
		kernels.OpBiasAdd:               bindElementwise,
		kernels.OpAdd:                   bindElementwise,
		kernels.OpMul:                   bindElementwise,
		kernels.OpScale:                 bindElementwise,
		kernels.OpSoftcap:               bindElementwise,
		kernels.OpSiLU:                  bindElementwise,
		kernels.OpGELU:                  bindElementwise,
		kernels.OpSiLUGate:              bindElementwise,
		kernels.OpGELUGate:              bindElementwise,
		kernels.OpCopy:                  bindElementwise,
		kernels.OpConvert:               bindElementwise,
		kernels.OpArgmax:                bindArgmax,
		kernels.OpGumbelTopK:            bindGumbel,
		kernels.OpGatherRows:            bindElementwise,
		kernels.OpPool:                  bindPool,
		kernels.OpMoERoute:              bindMoERoute,
		kernels.OpGEMVID:                bindGEMVID,
		kernels.OpGEMMID:                bindGEMVID,
		kernels.OpMoESum:                bindMoESum,
		kernels.OpAttentionDecodeRoPE:   bindAttnRoPE,
	}
	m := map[string]binder{}
	for _, k := range kernels.All() {
		if b, ok := byOp[k.Op]; ok {
			m[k.Name] = b
		}
	}
	return m
}()

func init() {
	names := make([]string, 0, len(binders))
	for _, k := range kernels.All() {
		if _, ok := binders[k.Name]; ok {
			names = append(names, k.Name)
		}
	}
	kernels.MustRegister("cpu", names...)
}
