#!/usr/bin/env bash
# Builds umoci from the Go module proxy into a cache directory outside the
# repository, keyed by its version; a warm cache does no work. Prints the path
# of the umoci binary.
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source=../go-tool.sh
source ../go-tool.sh
version=$(module_version github.com/opencontainers/umoci)
# Static and without cgo, like upstream's release build; its version string is
# embedded in the module, so no -X is needed.
build_go_tool umoci "$version" github.com/opencontainers/umoci/cmd/umoci "-s -w" "under a minute"
