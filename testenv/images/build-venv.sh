#!/usr/bin/env bash
# Builds one virtualenv image root for the process kubelet:
#   build-venv.sh <dest> <python> [--module <file.py>]... [--constraints <file>] <package[==version]>...
# Each --module file (the project's own Python, e.g. a test volume driver) is
# copied into the virtualenv's site-packages after the packages are installed.
# A --constraints file (a release's upper-constraints) holds every package pip
# installs, named or pulled in, to its version there (pip's -c).
# The virtualenv is created at /opt/venv inside a bubblewrap sandbox whose
# /opt/venv is <dest>, so its scripts' shebangs name the path pods see. Built
# with Debian's python (a Python under root's 0700 home cannot run as non-root),
# from PyPI (pip honours PIP_* settings, e.g. PIP_FIND_LINKS). Progress goes to
# stderr; <dest> appears only when the build succeeded.
set -euo pipefail
dest=$1
python=$2
shift 2
modules=()
constraints=
while [ "${1:-}" = "--module" ]; do
  modules+=("$2")
  shift 2
done
if [ "${1:-}" = "--constraints" ]; then
  constraints=$2
  shift 2
fi
mkdir -p "$(dirname "$dest")"
exec 9>"$dest.lock"
flock 9
if [ -f "$dest/.built" ]; then
  echo "image build: $dest is already built" >&2
  exit 0
fi
tmp="$dest.partial"
rm -rf "$tmp"
mkdir -p "$tmp"
args=(--die-with-parent --ro-bind /usr /usr --ro-bind /etc /etc --dir /opt --bind "$tmp" /opt/venv
  --dev /dev --proc /proc --tmpfs /tmp --setenv HOME /tmp)
for link in bin sbin lib lib64; do
  if [ -L "/$link" ]; then
    args+=(--symlink "$(readlink "/$link")" "/$link")
  elif [ -d "/$link" ]; then
    args+=(--ro-bind "/$link" "/$link")
  fi
done
if [ -n "${PIP_FIND_LINKS:-}" ] && [ -d "${PIP_FIND_LINKS}" ]; then
  args+=(--ro-bind "$PIP_FIND_LINKS" "$PIP_FIND_LINKS")
fi
pip_args=()
if [ -n "$constraints" ]; then
  args+=(--ro-bind "$constraints" /opt/constraints.txt)
  pip_args+=(-c /opt/constraints.txt)
fi
echo "image build: virtualenv with $python at $dest" >&2
bwrap "${args[@]}" -- "$python" -m venv /opt/venv
echo "image build: pip install ${pip_args[*]} $*" >&2
bwrap "${args[@]}" -- /opt/venv/bin/python -m pip install --no-input --progress-bar off "${pip_args[@]}" "$@" >&2
if [ "${#modules[@]}" -gt 0 ]; then
  site=$(bwrap "${args[@]}" -- /opt/venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "image build: adding ${modules[*]}" >&2
  cp "${modules[@]}" "$tmp${site#/opt/venv}/"
fi
chmod -R a+rX "$tmp"
touch "$tmp/.built"
rm -rf "$dest"
mv "$tmp" "$dest"
echo "image build: done: $dest" >&2
