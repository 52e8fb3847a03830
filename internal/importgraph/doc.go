// Package importgraph holds, as a test, which of the module's packages may
// import which: a table of each package's imports of ours, and the
// boundaries no row may cross (agent/... and hostd/... never import each
// other, internal/... imports nothing else of ours, ...). The test reads
// the import clauses of every Go file, whatever its build constraints, and
// fails on an import the table does not list, on a listed import nothing
// makes, and when the Imports section of docs/architecture.md is not the
// table as the test renders it. The package has no code of its own and
// nothing links it.
package importgraph
