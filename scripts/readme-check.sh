#!/usr/bin/env bash
# Keeps README.md true to the tree (ctest install.readme_names, label unit). Fails, listing each
# problem, when README.md does not name
#   - a top-level folder (`bench/`), a folder one level down in src/ transports/ tests/ bench/
#     tools/ (`src/topo/`), or a docs/*.md file (`docs/tuner.md`): written as that path, e.g. in
#     the Layout list;
#   - a ctest label in use (LABELS in the CMake files, and `ctest --print-labels` of BUILD_DIR when
#     given): written in backquotes, `unit`;
# or when it names what is not there: a backquoted folder path ending in "/" in the Layout section,
# a docs/*.md file, or a label on the "ctest labels:" line.
# Folders: what git tracks plus untracked files it does not ignore (build folders are ignored); a
# folder with no such file does not count. Without git: every folder but build*/ and hidden ones.
#   scripts/readme-check.sh [SOURCE_DIR] [BUILD_DIR]
set -uo pipefail
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
build=${2:-}
readme=$src/README.md
cd "$src" || exit 2
[ -f "$readme" ] || { echo "readme-check: no $readme"; exit 1; }
problems=0
problem() { echo "readme-check: $*"; problems=$((problems + 1)); }

if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git -C "$src" ls-files --cached --others --exclude-standard)
else
  files=$(find . -path './build*' -prune -o -path './.*' -prune -o -type f -print | sed 's|^\./||')
fi
# each file's folder, its parents, and the docs files
dirs=$(echo "$files" | awk -F/ 'NF > 1 { print $1 } NF > 2 { print $1 "/" $2 }' | sort -u)
wanted=()
for d in $dirs; do
  case "$d" in
    .git | .git/*) ;;
    */*) case "${d%%/*}" in src | transports | tests | bench | tools) wanted+=("$d") ;; esac ;;
    *) wanted+=("$d") ;;
  esac
done
while read -r f; do [ -n "$f" ] && wanted+=("$f"); done < <(echo "$files" | grep -E '^docs/[^/]+\.md$' | sort -u)

# a path counts as named when it stands alone: not inside a longer path or word
named() { grep -qE "(^|[^A-Za-z0-9_./-])$(printf '%s' "$1" | sed 's/[.]/\\./g')(/|[^A-Za-z0-9_./-]|[.][^A-Za-z0-9]|$)" "$readme"; }
for p in "${wanted[@]}"; do
  case "$p" in *.md) hint="\`$p\`" ;; *) hint="\`$p/\` and what it holds" ;; esac
  named "$p" || problem "README.md does not name $p (add it to the Layout list: $hint)"
done

# ctest labels in use
labels=$(echo "$files" | grep -E '(^|/)(CMakeLists\.txt|[^/]*\.cmake)$' | tr '\n' '\0' |
         xargs -0 -r grep -hoE 'LABELS +"?[A-Za-z_][A-Za-z0-9_;]*' 2>/dev/null | sed -E 's/LABELS +"?//' | tr ';' '\n')
if [ -n "$build" ] && [ -f "$build/CTestTestfile.cmake" ]; then
  labels+=$'\n'$(ctest --test-dir "$build" --print-labels 2>/dev/null | sed -n 's/^  *//p')
fi
labels=$(echo "$labels" | grep -E '^[A-Za-z_][A-Za-z0-9_]*$' | sort -u)
for l in $labels; do
  grep -q "\`$l\`" "$readme" || problem "README.md does not name the ctest label $l (add \`$l\` to the \"ctest labels:\" line)"
done

# the other way: what README names must exist
layout=$(awk '/^## /{on = ($0 ~ /^## Layout/)} on' "$readme")
for p in $(echo "$layout" | grep -oE '`[A-Za-z0-9_.][A-Za-z0-9_./-]*/`' | tr -d '`'); do
  [ -d "$src/$p" ] || problem "README.md's Layout names $p, which is not a folder"
done
for p in $(grep -oE 'docs/[A-Za-z0-9_.-]+\.md' "$readme" | sort -u); do
  [ -f "$src/$p" ] || problem "README.md names $p, which does not exist"
done
labelLine=$(grep -m1 -E 'ctest labels:' "$readme")
[ -n "$labelLine" ] || problem "README.md has no \"ctest labels:\" line"
for l in $(echo "$labelLine" | sed 's/.*ctest labels://' | grep -oE '`[A-Za-z_][A-Za-z0-9_]*`' | tr -d '`'); do
  echo "$labels" | grep -qx "$l" || problem "README.md lists the ctest label $l, which no test has"
done

if [ "$problems" -gt 0 ]; then
  echo "readme-check: $problems problem(s); README.md must name every folder, docs file and ctest label (scripts/readme-check.sh)"
  exit 1
fi
echo "readme-check: README.md names all ${#wanted[@]} folders/docs and $(echo "$labels" | wc -w) ctest labels"
