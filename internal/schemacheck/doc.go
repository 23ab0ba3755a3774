// Package schemacheck validates a JSON document against a JSON schema, for
// tests that must judge constrained output independently of the converter
// that produced the grammar (runtime/grammar/jsonschema). It covers the
// keywords that converter honors and refuses any other, so a schema the
// tests use cannot be half-checked. It knows nothing of grammars or models.
package schemacheck
