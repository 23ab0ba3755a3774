// Command servebench measures akunu serve under concurrent streams (make
// bench-serve): for each concurrency S it starts S streaming
// /v1/completions requests together and reports, from the client's side,
// the aggregate decode throughput and its scaling over one stream, the time
// to first token and the gaps between tokens. It is a program, not a test:
// timings are reported, never asserted.
//
//	go run ./internal/servebench [-akunu bin/akunu] [-streams 1,4,8,16] [-tokens 128] [-prompt 64]
//	    [-reps 3] [-threads N] [-json out.json] PLAN
//	go run ./internal/servebench -url http://127.0.0.1:8080 [flags] [LABEL]
//
// It owns the client, the subprocess it serves from (akunu serve PLAN
// --port 0 --parallel max(S), its own process, stopped with SIGTERM at the
// end) and the statistics. It must not import the server or the runtime:
// what it measures is what an OpenAI client sees over HTTP, so it reads
// only the wire format (server-sent events, the final chunk's timings).
//
// Each request's prompt is token ids, distinct from every other request's
// from the first token (promptFor), decoded greedily with ignore_eos, so
// every stream does the same, full work and no prefix is reused. Chunks are
// not tokens (the server flushes whatever text it has); tokenGaps says how
// a chunk's gap is shared among the tokens it carried.
package main
