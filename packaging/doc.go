// Package packaging holds the tests of quarry's release packaging: the
// Debian package's recipe (nfpm.yaml) and files (deb/: the systemd unit,
// the environment file, the maintainer scripts), the container recipe
// (Dockerfile and compose.yaml at the repository's root) and the release
// build (scripts/dist.sh, make dist). It has no code of its own.
package packaging
