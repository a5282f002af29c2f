#!/usr/bin/env bash
# Builds Sinter and runs every example program. Usage: bash scripts/demo.sh
# Installs missing system packages first (scripts/bootstrap.sh, apt).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JOBS="${SN_JOBS:-$(nproc 2>/dev/null || echo 2)}"

bash "$ROOT/scripts/bootstrap.sh"
cmake -S "$ROOT" -B "$ROOT/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DSN_SHARED_DIR=${SN_SHARED_DIR:-$ROOT/../shared}" >/dev/null
cmake --build "$ROOT/build" -j "$JOBS" --target examples

shopt -s nullglob
ran=0
failed=0
# Every examples/<name>.c is built as build/examples/<name>.
for src in "$ROOT"/examples/*.c; do
  name="$(basename "$src" .c)"
  exe="$ROOT/build/examples/$name"
  echo
  echo "=== examples/$name.c  ($exe)"
  if "$exe"; then
    ran=$((ran + 1))
  else
    echo "demo: $name exited with status $?" >&2
    failed=$((failed + 1))
  fi
done

echo
if ((ran + failed == 0)); then
  echo "demo: no examples/*.c yet"
  exit 1
fi
echo "demo: $ran example(s) ran, $failed failed"
((failed == 0))
