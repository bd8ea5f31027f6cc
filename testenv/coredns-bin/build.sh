#!/usr/bin/env bash
# Builds CoreDNS (with only the plugins main.go links) from the Go module proxy
# into a cache directory outside the repository, keyed by its version; a warm
# cache does no work. Prints the path of the coredns binary.
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source=../go-tool.sh
source ../go-tool.sh
version=$(module_version github.com/coredns/coredns)
# The package is this module's main.go; CoreDNS's version string is a constant
# in its module, so no -X is needed.
build_go_tool coredns "$version" . "-s -w" "about 3 min on 2 cores"
