// Package sync is what both sides of the data channel agree on when they
// move whitelisted data between a polecat's data root on the host and in
// its container, as tar+zstd archives: the policy (a whitelist of paths,
// and a blacklist of secrets that is always excluded), the manifest that
// describes an archive, the limits an archive must stay within, and how a
// symlink is judged by where it leads. Of this module it imports only
// internal/jsonscan, for the manifest's one-pass decoder: its subpackages
// do the work. tree opens a data root so that nothing leads outside it
// (os.Root, no symlink followed); archive packs a tree and extracts an
// archive without trusting it; merge takes a container's archive into a
// host root by a three-way merge; claude rewrites Claude Code settings
// for a container. None of them knows the tunnel or the CLI. Callers that
// also need the standard library's sync import this package as datasync.
//
// An archive is a zstd stream of a tar stream whose last member is the
// manifest (ManifestName): every entry before it, with its size, mode,
// modification time and SHA-256. An archive without it, or whose members
// differ from it, is refused, so a truncated stream is never taken for a
// complete one.
package sync
