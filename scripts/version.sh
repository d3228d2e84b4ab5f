#!/usr/bin/env bash
# version.sh prints, as shell assignments for eval, what a release build
# stamps into quarry and names its files after:
#   VERSION            git describe --tags --always --dirty (the tag on a
#                      tagged commit, else tag-N-gHASH, else the short hash)
#   COMMIT             the full commit hash
#   SOURCE_DATE_EPOCH  the commit's time in seconds: the build date, so that
#                      two builds of one commit are identical
#   DATE               the same in RFC 3339, UTC
#   FILE_VERSION       VERSION without a leading "v", for file names
#   DEB_VERSION        a Debian version that sorts as releases do:
#                      v1.2.0 -> 1.2.0, v1.2.0-rc1 -> 1.2.0~rc1,
#                      v1.2.0-3-gabc1234 -> 1.2.0+git3.gabc1234, and
#                      without a tag 0~git<commit time>.<hash>; "-dirty"
#                      becomes ".dirty" ("+dirty" on a bare tag)
# Each is taken from the environment when set there, so that a copy of
# the tree without .git builds the same files.
set -euo pipefail

VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
COMMIT=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
DATE=${DATE:-$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)}
FILE_VERSION=${FILE_VERSION:-${VERSION#v}}

if [ -z "${DEB_VERSION:-}" ]; then
	v=$FILE_VERSION
	dirty=
	case $v in *-dirty) v=${v%-dirty} dirty=dirty ;; esac
	suffix=
	if [[ $v =~ ^(.*)-([0-9]+)-g([0-9a-f]+)$ ]]; then
		v=${BASH_REMATCH[1]}
		suffix="+git${BASH_REMATCH[2]}.g${BASH_REMATCH[3]}"
	fi
	# A release tag is major.minor[.patch...]; a bare commit hash may
	# start with a digit too, and is not one.
	if [[ $v =~ ^[0-9]+\.[0-9]+ ]]; then
		DEB_VERSION=${v//-/\~}$suffix
		if [ -n "$dirty" ]; then
			if [ -n "$suffix" ]; then DEB_VERSION+=.$dirty; else DEB_VERSION+=+$dirty; fi
		fi
	else
		DEB_VERSION=0~git$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%d%H%M%S).${v//[^0-9A-Za-z.+~]/.}
		if [ -n "$dirty" ]; then DEB_VERSION+=.$dirty; fi
	fi
fi

for var in VERSION COMMIT SOURCE_DATE_EPOCH DATE FILE_VERSION DEB_VERSION; do
	printf '%s=%q\n' "$var" "${!var}"
done
