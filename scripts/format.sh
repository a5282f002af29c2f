#!/usr/bin/env bash
# Formats the C and C++ sources with clang-format (.clang-format: Google style, 120 columns).
#   bash scripts/format.sh           rewrite files in place
#   bash scripts/format.sh --check   list files that need formatting; exit 1 if any
# Only files git knows about (tracked or untracked-but-not-ignored) are touched, so build trees are skipped.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

mapfile -t files < <(git ls-files --cached --others --exclude-standard -- \
  '*.c' '*.h' '*.cc' '*.cpp' '*.hpp' | grep -v -E '^(bindings/rust/.*/bindings\.rs|third_party/)' || true)
if ((${#files[@]} == 0)); then
  echo "format: no C/C++ files"
  exit 0
fi

if [[ "${1:-}" == "--check" ]]; then
  bad=()
  for f in "${files[@]}"; do
    [[ -f "$f" ]] || continue
    if ! clang-format --style=file "$f" | cmp -s - "$f"; then
      bad+=("$f")
    fi
  done
  if ((${#bad[@]})); then
    printf 'format: needs clang-format: %s\n' "${bad[@]}"
    exit 1
  fi
  echo "format: ${#files[@]} files clean"
else
  clang-format --style=file -i "${files[@]}"
  echo "format: formatted ${#files[@]} files"
fi
