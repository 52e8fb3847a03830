// Package sync moves whitelisted data between a polecat's data root on the
// host and in its container, as tar+zstd archives: the policy (a whitelist
// of paths, and a blacklist of secrets that is always excluded), packing a
// tree into an archive with a manifest, and extracting an archive without
// trusting it. It is pure: no tunnel, no CLI. Callers that also need the
// standard library's sync import it as datasync.
//
// An archive is a zstd stream of a tar stream whose last member is the
// manifest (ManifestName): every entry before it, with its size, mode,
// modification time and SHA-256. An archive without it, or whose members
// differ from it, is refused, so a truncated stream is never taken for a
// complete one.
package sync
