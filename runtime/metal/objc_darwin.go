//go:build darwin

package metal

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The Objective-C runtime, called without cgo: objc_msgSend is an ordinary
// C function whose arguments are the receiver, the selector and the
// method's own, so purego.SyscallN calls it with integer-class arguments
// (every message this backend sends takes pointers, NSUIntegers, BOOLs, or
// MTLSize structs, which arm64 passes by reference because they exceed 16
// bytes). No message takes or returns a float, which SyscallN could not
// mix with integers.
var (
	objcOnce   sync.Once
	objcErr    error
	msgSendFn  uintptr
	selRegFn   uintptr
	getClassFn uintptr
	poolPushFn uintptr
	poolPopFn  uintptr
)

func loadObjC() error {
	objcOnce.Do(func() {
		lib, err := purego.Dlopen("/usr/lib/libobjc.A.dylib", purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			objcErr = fmt.Errorf("metal: libobjc: %w", err)
			return
		}
		for _, s := range []struct {
			name string
			fn   *uintptr
		}{
			{"objc_msgSend", &msgSendFn}, {"sel_registerName", &selRegFn}, {"objc_getClass", &getClassFn},
			{"objc_autoreleasePoolPush", &poolPushFn}, {"objc_autoreleasePoolPop", &poolPopFn},
		} {
			if *s.fn, err = purego.Dlsym(lib, s.name); err != nil {
				objcErr = fmt.Errorf("metal: libobjc: %w", err)
				return
			}
		}
	})
	return objcErr
}

// cstr is s NUL-terminated, on the heap.
func cstr(s string) []byte { return append([]byte(s), 0) }

func sel(name string) uintptr {
	b := cstr(name)
	r, _, _ := purego.SyscallN(selRegFn, uintptr(unsafe.Pointer(&b[0])))
	return r
}

func class(name string) uintptr {
	b := cstr(name)
	r, _, _ := purego.SyscallN(getClassFn, uintptr(unsafe.Pointer(&b[0])))
	return r
}

// msg0..msg4 send a message with that many arguments, for loading and
// waiting: uintptrescapes keeps a Go pointer converted in the call alive
// on the heap for the call. Each costs one allocation (SyscallN's
// variadic list escapes); the encoder's hot path avoids them (encoder).
//
//go:uintptrescapes
func msg0(id, sel uintptr) uintptr {
	r, _, _ := purego.SyscallN(msgSendFn, id, sel)
	return r
}

//go:uintptrescapes
func msg1(id, sel, a uintptr) uintptr {
	r, _, _ := purego.SyscallN(msgSendFn, id, sel, a)
	return r
}

//go:uintptrescapes
func msg2(id, sel, a, b uintptr) uintptr {
	r, _, _ := purego.SyscallN(msgSendFn, id, sel, a, b)
	return r
}

//go:uintptrescapes
func msg3(id, sel, a, b, c uintptr) uintptr {
	r, _, _ := purego.SyscallN(msgSendFn, id, sel, a, b, c)
	return r
}

//go:uintptrescapes
func msg4(id, sel, a, b, c, d uintptr) uintptr {
	r, _, _ := purego.SyscallN(msgSendFn, id, sel, a, b, c, d)
	return r
}

func poolPush() uintptr {
	r, _, _ := purego.SyscallN(poolPushFn)
	return r
}

func poolPop(p uintptr) { purego.SyscallN(poolPopFn, p) }

// ptr turns an address Metal returned (a buffer's contents, a C string)
// into a Go pointer. The memory is not Go's: the GC ignores it.
func ptr(addr uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&addr)) }

// sels are the selectors the backend sends, registered once.
var sels struct {
	alloc, init, new, release, retain                                         uintptr
	initWithBytes, utf8String, fileURLWithPath                                uintptr
	newCommandQueue, newLibraryWithSource, newLibraryWithURL                  uintptr
	newFunctionWithName, newFunctionWithNameConstants, setConstantValue       uintptr
	newComputePipelineState, maxTotalThreads                                  uintptr
	newBufferWithLength, newBufferWithBytesNoCopy, contents                   uintptr
	name, supportsFamily, maxBufferLength, hasUnifiedMemory, recommendedMaxWS uintptr
	setLanguageVersion, setRetainedReferences, setErrorOptions                uintptr
	commandBufferWithDescriptor, commandBufferWithUnretainedReferences        uintptr
	computeCommandEncoder, endEncoding, commit, waitUntilCompleted, status    uintptr
	error, setLabel, pushDebugGroup, popDebugGroup                            uintptr
	setComputePipelineState, setBuffer, setBytes, setThreadgroupMemoryLength  uintptr
	dispatchThreadgroups, dispatchThreads                                     uintptr
	localizedDescription, code, userInfo, objectForKey, count, objectAtIndex  uintptr
	label, debugSignposts, errorState                                         uintptr
	blitCommandEncoder, copyFromBuffer                                        uintptr
}

func registerSels() {
	s := &sels
	for _, e := range []struct {
		p    *uintptr
		name string
	}{
		{&s.alloc, "alloc"}, {&s.init, "init"}, {&s.new, "new"}, {&s.release, "release"}, {&s.retain, "retain"},
		{&s.initWithBytes, "initWithBytes:length:encoding:"}, {&s.utf8String, "UTF8String"},
		{&s.fileURLWithPath, "fileURLWithPath:"},
		{&s.newCommandQueue, "newCommandQueue"}, {&s.newLibraryWithSource, "newLibraryWithSource:options:error:"},
		{&s.newLibraryWithURL, "newLibraryWithURL:error:"},
		{&s.newFunctionWithName, "newFunctionWithName:"},
		{&s.newFunctionWithNameConstants, "newFunctionWithName:constantValues:error:"},
		{&s.setConstantValue, "setConstantValue:type:atIndex:"},
		{&s.newComputePipelineState, "newComputePipelineStateWithFunction:error:"},
		{&s.maxTotalThreads, "maxTotalThreadsPerThreadgroup"},
		{&s.newBufferWithLength, "newBufferWithLength:options:"},
		{&s.newBufferWithBytesNoCopy, "newBufferWithBytesNoCopy:length:options:deallocator:"},
		{&s.contents, "contents"},
		{&s.name, "name"}, {&s.supportsFamily, "supportsFamily:"}, {&s.maxBufferLength, "maxBufferLength"},
		{&s.hasUnifiedMemory, "hasUnifiedMemory"}, {&s.recommendedMaxWS, "recommendedMaxWorkingSetSize"},
		{&s.setLanguageVersion, "setLanguageVersion:"}, {&s.setRetainedReferences, "setRetainedReferences:"},
		{&s.setErrorOptions, "setErrorOptions:"},
		{&s.commandBufferWithDescriptor, "commandBufferWithDescriptor:"},
		{&s.commandBufferWithUnretainedReferences, "commandBufferWithUnretainedReferences"},
		{&s.computeCommandEncoder, "computeCommandEncoder"}, {&s.endEncoding, "endEncoding"},
		{&s.commit, "commit"}, {&s.waitUntilCompleted, "waitUntilCompleted"}, {&s.status, "status"},
		{&s.error, "error"}, {&s.setLabel, "setLabel:"}, {&s.pushDebugGroup, "pushDebugGroup:"},
		{&s.popDebugGroup, "popDebugGroup"},
		{&s.setComputePipelineState, "setComputePipelineState:"}, {&s.setBuffer, "setBuffer:offset:atIndex:"},
		{&s.setBytes, "setBytes:length:atIndex:"}, {&s.setThreadgroupMemoryLength, "setThreadgroupMemoryLength:atIndex:"},
		{&s.dispatchThreadgroups, "dispatchThreadgroups:threadsPerThreadgroup:"},
		{&s.dispatchThreads, "dispatchThreads:threadsPerThreadgroup:"},
		{&s.localizedDescription, "localizedDescription"}, {&s.code, "code"}, {&s.userInfo, "userInfo"},
		{&s.objectForKey, "objectForKey:"}, {&s.count, "count"}, {&s.objectAtIndex, "objectAtIndex:"},
		{&s.label, "label"}, {&s.debugSignposts, "debugSignposts"}, {&s.errorState, "errorState"},
		{&s.blitCommandEncoder, "blitCommandEncoder"},
		{&s.copyFromBuffer, "copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size:"},
	} {
		*e.p = sel(e.name)
	}
}

const nsUTF8StringEncoding = 4

// nsString makes an owned NSString (+1: release it) from s.
func nsString(s string) uintptr {
	b := []byte(s)
	if len(b) == 0 {
		b = []byte{0}
		b = b[:0:1]
	}
	obj := msg0(class("NSString"), sels.alloc)
	return msg3(obj, sels.initWithBytes, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), nsUTF8StringEncoding)
}

// goString copies an NSString's UTF-8 bytes; "" for nil.
func goString(ns uintptr) string {
	if ns == 0 {
		return ""
	}
	p := msg0(ns, sels.utf8String)
	if p == 0 {
		return ""
	}
	n := 0
	for *(*byte)(ptr(p + uintptr(n))) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(ptr(p)), n))
}

// nsErrorString is an NSError's localizedDescription.
func nsErrorString(err uintptr) string {
	if err == 0 {
		return "(no NSError)"
	}
	return goString(msg0(err, sels.localizedDescription))
}

func release(id uintptr) {
	if id != 0 {
		msg0(id, sels.release)
	}
}
