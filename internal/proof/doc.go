// Package proof is for tests that prove a claim with a tool the machine
// may lack (clang for the MSL kernels, a C compiler for ShaderTypes.h).
// Such a test must not pass quietly where the tool is missing: in CI
// (CI=true, which .ci/run sets after installing every tool) it fails;
// elsewhere it skips and adds a line to the file $AKUNU_SKIPPED_PROOFS
// names, which make test prints at its end. It knows nothing of what the
// tests prove.
package proof
