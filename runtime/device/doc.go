// Package device is the contract between the runtime and its backends:
// handles to memory and to bound programs, and Resolve, the one place where
// a plan's command is checked against the kernel catalog and against the
// buffers a backend actually made for it, before any backend binds it.
//
// A backend owns its memory (host memory on the CPU, device memory on a
// GPU) and its bound commands; the runtime holds only handles and reads
// results through the backend's explicit reads of declared I/O. A backend
// turns a resolved Command into its own typed structure once, at load, and
// re-checks nothing: what Resolve accepted is safe to replay for every step
// within the bounds it was given.
//
// It must not know programs' strategies (chains, batches) or architectures;
// it knows one command, its kernel and its buffers.
package device
