#!/usr/bin/env bash
# dist.sh builds quarry's release files into DIST_DIR (default dist/), for
# each architecture of ARCHES (default "amd64 arm64"):
#   quarry_<version>_linux_<arch>.tar.gz  the binary, LICENSE, README.md, docs/
#   quarry_<deb version>_<arch>.deb       the Debian package (packaging/nfpm.yaml)
# and SHA256SUMS over them. The version, commit and date come from
# scripts/version.sh. The files are reproducible: the binary is built
# without cgo (the SQLite engine is pure Go), with -trimpath and without
# VCS stamping; the archive's entries are sorted, owned by 0:0, with
# normalised modes and the commit's time; gzip writes no name or time; the
# package's times come from SOURCE_DATE_EPOCH. Two runs on one commit give
# the same bytes (packaging/dist_test.go checks it).
#
# NFPM names an nfpm binary to use; by default it is built from
# packaging/nfpm/go.mod (a module of its own, so that quarry's go.mod does
# not carry nfpm's dependencies) into .cache/bin/nfpm.
set -euo pipefail

GO=${GO:-go}
ARCHES=${ARCHES:-amd64 arm64}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
DIST_DIR=${DIST_DIR:-dist}
mkdir -p "$DIST_DIR"
DIST_DIR=$(cd "$DIST_DIR" && pwd)

eval "$(bash scripts/version.sh)"
export SOURCE_DATE_EPOCH DEB_VERSION

if [ -z "${NFPM:-}" ]; then
	NFPM=$root/.cache/bin/nfpm
	"$GO" build -C packaging/nfpm -o "$NFPM" github.com/goreleaser/nfpm/v2/cmd/nfpm
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rm -f "$DIST_DIR"/quarry_*.tar.gz "$DIST_DIR"/quarry_*.deb "$DIST_DIR"/SHA256SUMS
ldflags="-s -w -X main.version=$VERSION -X main.commit=$COMMIT -X main.date=$DATE"
for arch in $ARCHES; do
	name=quarry_${FILE_VERSION}_linux_${arch}
	stage=$work/$name
	mkdir -p "$stage"
	echo "dist: $name (version $VERSION, commit $COMMIT, date $DATE)" >&2
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch GOFLAGS= \
		"$GO" build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$stage/quarry" ./cmd/quarry
	cp LICENSE README.md "$stage/"
	# In a git checkout, tracked files only: what is in docs/ but not in
	# git stays out. Elsewhere (a copy without .git), all of docs/.
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files -z docs | xargs -0 -r cp --parents -t "$stage"
	else
		cp -r docs "$stage/docs"
	fi
	# Modes as the archive and the package record them, whatever the umask.
	chmod -R u+rwX,go+rX,go-w "$stage"

	tar --format=gnu --sort=name --mtime="@$SOURCE_DATE_EPOCH" \
		--owner=0 --group=0 --numeric-owner --mode='u+rwX,go+rX,go-w' \
		-C "$work" -cf - "$name" | gzip -9 -n >"$DIST_DIR/$name.tar.gz"

	GOARCH=$arch STAGE=$stage "$NFPM" package --config packaging/nfpm.yaml --packager deb \
		--target "$DIST_DIR/quarry_${DEB_VERSION}_${arch}.deb" >&2
done

(cd "$DIST_DIR" && sha256sum quarry_*.tar.gz quarry_*.deb >SHA256SUMS)
echo "dist: $DIST_DIR" >&2
cat "$DIST_DIR/SHA256SUMS"
