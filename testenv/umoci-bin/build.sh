#!/usr/bin/env bash
# Builds umoci from the Go module proxy into a cache directory outside the
# repository, keyed by its version; a warm cache does no work. Prints the path
# of the umoci binary.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v go >/dev/null 2>&1; then
  echo "build.sh: the Go toolchain (go) is not on PATH; install Go 1.26 or newer" >&2
  exit 3
fi
version=$(sed -n 's/^[[:space:]]*github.com\/opencontainers\/umoci \(v[^ ]*\).*/\1/p' go.mod)
if [ -z "$version" ]; then
  echo "build.sh: no github.com/opencontainers/umoci version in go.mod" >&2
  exit 3
fi
cache_root=${RATCHET_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ratchet}
out="$cache_root/umoci-$version"
if [ -x "$out/umoci" ] && [ -f "$out/.stamp" ] && cmp -s "$out/.stamp" <(cat go.mod go.sum build.sh); then
  echo "$out/umoci"
  exit 0
fi
mkdir -p "$out"
# shellcheck source=../progress.sh
source ../progress.sh
package=github.com/opencontainers/umoci/cmd/umoci
echo "Building umoci $version from Go modules into $out (first time: under a minute; logs in $out/*.log)" >&2
# Static and without cgo, like upstream's release build; its version string is
# embedded in the module, so no -X is needed.
export CGO_ENABLED=0
with_progress "downloading modules" "$out/download.log" 0 go list -deps "$package"
with_progress "building umoci" "$out/umoci.log" "$(wc -l <"$out/download.log")" \
  go build -v -trimpath -buildvcs=false -ldflags "-s -w" -o "$out/umoci.tmp" "$package"
mv "$out/umoci.tmp" "$out/umoci"
cat go.mod go.sum build.sh > "$out/.stamp"
echo "$out/umoci"
