# Sourced by the build scripts of single-binary Go tools (helm, umoci): build
# one from the Go module proxy into a cache directory outside the repository,
# keyed by its version; a warm cache does no work.

# shellcheck source=progress.sh
source "$(dirname "${BASH_SOURCE[0]}")/progress.sh"

# A build that stops says where, instead of ending silently under `set -e`.
set -E
trap 'echo "$0: stopped at line $LINENO: $BASH_COMMAND" >&2' ERR

if ! command -v go >/dev/null 2>&1; then
  echo "build.sh: the Go toolchain (go) is not on PATH; install Go 1.26 or newer" >&2
  exit 3
fi

# The version go.mod (in the current directory) requires of MODULE.
module_version() {
  local version
  version=$(sed -n "s|^[[:space:]]*\(require \)\{0,1\}$1 \(v[^ ]*\).*|\2|p" go.mod | head -n 1)
  if [ -z "$version" ]; then
    echo "build.sh: go.mod requires no $1" >&2
    exit 3
  fi
  echo "$version"
}

# What a cached binary was built from: go.mod, go.sum, build.sh and the
# module's own Go files (CoreDNS's plugin list is in its main.go; helm and
# umoci have none, so their stamps are as before).
stamp_inputs() {
  cat go.mod go.sum build.sh
  local f
  for f in *.go; do
    [ -f "$f" ] && cat "$f"
  done
  return 0
}

#   lock_cache DIR
# Creates DIR and holds its lock until the script exits, so two builds of one
# version (two test binaries starting at once) build it once: the second
# waits, then finds it cached.
lock_cache() {
  mkdir -p "$1"
  exec 9>"$1/.lock"
  flock 9
}

#   build_go_tool NAME VERSION PACKAGE LDFLAGS FIRST_TIME
# Builds PACKAGE as NAME (static, no cgo) into the cache unless the cached one
# was built from these inputs (stamp_inputs); prints the binary's path.
# FIRST_TIME says how long a cold build takes.
build_go_tool() {
  local name=$1 version=$2 package=$3 ldflags=$4 first_time=$5
  local cache_root=${RATCHET_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ratchet}
  local out="$cache_root/$name-$version"
  local attempt
  for attempt in unlocked locked; do
    if [ -x "$out/$name" ] && [ -f "$out/.stamp" ] && cmp -s "$out/.stamp" <(stamp_inputs); then
      echo "$out/$name"
      return 0
    fi
    [ "$attempt" = unlocked ] && lock_cache "$out"
  done
  echo "Building $name $version from Go modules into $out (first time: $first_time; logs in $out/*.log)" >&2
  export CGO_ENABLED=0
  with_progress "downloading modules" "$out/download.log" 0 go list -deps "$package"
  with_progress "building $name" "$out/$name.log" "$(wc -l <"$out/download.log")" \
    go build -v -trimpath -buildvcs=false -ldflags "$ldflags" -o "$out/$name.tmp" "$package"
  mv "$out/$name.tmp" "$out/$name"
  stamp_inputs > "$out/.stamp"
  echo "$out/$name"
}
