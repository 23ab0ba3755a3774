//go:build amd64 && !purego

#include "textflag.h"

// func pause()
TEXT ·pause(SB), NOSPLIT, $0-0
	PAUSE
	RET

// func cpuidVendor() (ebx, edx, ecx uint32)
//
// CPUID leaf 0: the vendor string's three words ("Genu" "ineI" "ntel").
TEXT ·cpuidVendor(SB), NOSPLIT, $0-12
	XORL AX, AX
	XORL CX, CX
	CPUID
	MOVL BX, ebx+0(FP)
	MOVL DX, edx+4(FP)
	MOVL CX, ecx+8(FP)
	RET
