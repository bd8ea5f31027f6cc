#!/usr/bin/env bash
# Builds the local control plane's binaries (etcd, kube-apiserver,
# kube-controller-manager, kubectl, and kube-proxy for the process kubelet's
# node) from Go modules into a cache directory
# outside the repository, keyed by the Kubernetes version in go.mod.
# A warm cache does no work. Prints the directory holding the binaries.
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source=../go-tool.sh
source ../go-tool.sh
k8s_version=$(module_version k8s.io/kubernetes)
cache_root=${RATCHET_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ratchet}
out="$cache_root/kube-$k8s_version"
tools=(etcd kube-apiserver kube-controller-manager kubectl kube-proxy)
cached() {
  local t
  for t in "${tools[@]}"; do [ -x "$out/$t" ] || return 1; done
  [ -f "$out/.stamp" ] && cmp -s "$out/.stamp" <(cat go.mod go.sum build.sh)
}
for attempt in unlocked locked; do
  if cached; then
    echo "$out"
    exit 0
  fi
  # A concurrent build of this version (lock_cache, ../go-tool.sh) finishes first.
  [ "$attempt" = unlocked ] && lock_cache "$out"
done
export CGO_ENABLED=0
# Without these the binaries report v0.0.0-master.
minor=${k8s_version#v1.}; minor=${minor%%.*}
version_flags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  version_flags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
done
flags=(-trimpath -ldflags "-s -w$version_flags")
packages=(go.etcd.io/etcd/server/v3 k8s.io/kubernetes/cmd/kube-apiserver
  k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl
  k8s.io/kubernetes/cmd/kube-proxy)
echo "Building Kubernetes $k8s_version from Go modules into $out (first time: about 6 min on 2 cores; logs in $out/*.log)" >&2
with_progress "downloading modules" "$out/download.log" 0 go list -deps "${packages[@]}"
build() {
  local name=$1 pkg=$2 total
  total=$(go list -deps "$pkg" | wc -l)
  with_progress "building $name" "$out/$name.log" "$total" go build -v "${flags[@]}" -o "$out/$name.tmp" "$pkg"
  mv "$out/$name.tmp" "$out/$name"
}
build etcd "${packages[0]}"
build kube-apiserver "${packages[1]}"
build kube-controller-manager "${packages[2]}"
build kubectl "${packages[3]}"
build kube-proxy "${packages[4]}"
cat go.mod go.sum build.sh > "$out/.stamp"
echo "$out"
