#!/usr/bin/env bash
# Builds helm from the Go module proxy into a cache directory outside the
# repository, keyed by its version; a warm cache does no work. Prints the path
# of the helm binary.
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source=../go-tool.sh
source ../go-tool.sh
version=$(module_version helm.sh/helm/v3)
build_go_tool helm "$version" helm.sh/helm/v3/cmd/helm \
  "-s -w -X helm.sh/helm/v3/internal/version.version=$version" "about 2 min"
