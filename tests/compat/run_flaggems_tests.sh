#!/usr/bin/env bash
# Run FlagGems' own tests/test_pointwise_dynamic.py against tritonwise through the renaming shim.
#
#   tests/compat/run_flaggems_tests.sh FLAGGEMS [MODE] [pytest args...]
#
# FLAGGEMS  a FlagGems checkout (directory holding tests/test_pointwise_dynamic.py), or a git
#           repository, bare or not, from which the file is taken with `git show REV:path`
#           (REV: $FLAGGEMS_REV, default HEAD).
# MODE      own        CPU tensors through tritonwise's own interpreter path (default)
#           interpret  CPU tensors with TRITON_INTERPRET=1, as FlagGems users debug
#           gpu        CUDA tensors
# The file is copied to a temporary directory and run there; nothing is written into FLAGGEMS
# or this repository. Generated kernels go to $TRITONWISE_CACHE_DIR, else a fresh temporary one.
set -euo pipefail

if [[ $# -lt 1 ]]; then
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
flaggems=$1
mode=${2:-own}
shift $(( $# >= 2 ? 2 : 1 ))

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
test_file=tests/test_pointwise_dynamic.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ -f "$flaggems/$test_file" ]]; then
    cp "$flaggems/$test_file" "$work/"
elif git -C "$flaggems" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$flaggems" show "${FLAGGEMS_REV:-HEAD}:$test_file" >"$work/test_pointwise_dynamic.py"
else
    echo "error: $flaggems is neither a FlagGems checkout (no $test_file) nor a git repository" >&2
    exit 2
fi

case $mode in
    own) export TRITONWISE_COMPAT_DEVICE=cpu; unset TRITON_INTERPRET ;;
    interpret) export TRITONWISE_COMPAT_DEVICE=cpu TRITON_INTERPRET=1 ;;
    gpu) export TRITONWISE_COMPAT_DEVICE=cuda; unset TRITON_INTERPRET ;;
    *) echo "error: MODE must be own, interpret or gpu, got '$mode'" >&2; exit 2 ;;
esac

export PYTHONPATH="$here/shim:$repo${PYTHONPATH:+:$PYTHONPATH}"
export TRITONWISE_CACHE_DIR=${TRITONWISE_CACHE_DIR:-$work/cache}
echo "FlagGems' $test_file from $flaggems, mode $mode, tritonwise from $repo" >&2
cd "$work"
python -m pytest -q -p no:cacheprovider test_pointwise_dynamic.py "$@"
