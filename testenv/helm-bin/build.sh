#!/usr/bin/env bash
# Builds helm from the Go module proxy into a cache directory outside the
# repository, keyed by its version; a warm cache does no work. Prints the path
# of the helm binary.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v go >/dev/null 2>&1; then
  echo "build.sh: the Go toolchain (go) is not on PATH; install Go 1.26 or newer" >&2
  exit 3
fi
version=$(sed -n 's/^require helm.sh\/helm\/v3 \(v[^ ]*\).*/\1/p' go.mod)
cache_root=${RATCHET_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ratchet}
out="$cache_root/helm-$version"
if [ -x "$out/helm" ] && [ -f "$out/.stamp" ] && cmp -s "$out/.stamp" <(cat go.mod go.sum build.sh); then
  echo "$out/helm"
  exit 0
fi
mkdir -p "$out"
# shellcheck source=../progress.sh
source ../progress.sh
package=helm.sh/helm/v3/cmd/helm
echo "Building helm $version from Go modules into $out (first time: about 2 min; logs in $out/*.log)" >&2
export CGO_ENABLED=0
with_progress "downloading modules" "$out/download.log" 0 go list -deps "$package"
with_progress "building helm" "$out/helm.log" "$(wc -l <"$out/download.log")" \
  go build -v -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$version" \
  -o "$out/helm.tmp" "$package"
mv "$out/helm.tmp" "$out/helm"
cat go.mod go.sum build.sh > "$out/.stamp"
echo "$out/helm"
