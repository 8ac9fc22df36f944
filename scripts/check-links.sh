#!/usr/bin/env bash
# Check that README.md and docs/*.md point only at files the repository has.
#
# Checked, outside fenced code blocks:
#  - Markdown links and images `[text](target)`: the target, without its
#    `#anchor`, relative to the file that holds the link. Web addresses
#    (scheme:...) and same-page anchors (#...) are not checked.
#  - Backticked repository paths: a code span that is one path starting with
#    crates/, docs/, scripts/ or .ci/ (relative to the repository root; a
#    trailing `:LINE` is ignored, a trailing `/` must be a directory), or a
#    bare `NAME.md` (at the root or beside the file). Spans with wildcards or
#    placeholders (* < > { } ...) are skipped.
#
# Prints every broken reference as FILE:LINE: TARGET and exits 1 if there is
# one; exits 0 and prints a count otherwise. Needs only bash, awk and grep.
set -euo pipefail
cd "$(dirname "$0")/.."

files=(README.md docs/*.md)

# One line per reference: FILE<TAB>LINE<TAB>KIND<TAB>TARGET.
extract() {
  awk -v f="$1" '
    /^[ \t]*(```|~~~)/ { fence = !fence; next }
    fence { next }
    {
      line = $0
      # Markdown links and images: ](target) or ](target "title").
      s = line
      while (match(s, /\]\([^)]+\)/)) {
        t = substr(s, RSTART + 2, RLENGTH - 3)
        s = substr(s, RSTART + RLENGTH)
        sub(/[ \t]+"[^"]*"$/, "", t)
        printf "%s\t%d\tlink\t%s\n", f, NR, t
      }
      # Code spans.
      s = line
      while (match(s, /`[^`]+`/)) {
        t = substr(s, RSTART + 1, RLENGTH - 2)
        s = substr(s, RSTART + RLENGTH)
        printf "%s\t%d\tcode\t%s\n", f, NR, t
      }
    }' "$1"
}

broken=0
checked=0
for f in "${files[@]}"; do
  dir=$(dirname "$f")
  while IFS=$'\t' read -r file line kind target; do
    case "$kind" in
      link)
        case "$target" in
          '#'* | *://* | mailto:*) continue ;;
        esac
        path=${target%%#*}
        [ -n "$path" ] || continue
        checked=$((checked + 1))
        if [ ! -e "$dir/$path" ]; then
          echo "$file:$line: link to $target: no such file"
          broken=$((broken + 1))
        fi
        ;;
      code)
        # Only spans that are one path-like token.
        [[ "$target" =~ ^[A-Za-z0-9_./:-]+$ ]] || continue
        [[ "$target" == *...* ]] && continue
        path=${target%%:[0-9]*}
        if [[ "$path" =~ ^(crates|docs|scripts|\.ci)/ ]]; then
          checked=$((checked + 1))
          if [[ "$path" == */ ]]; then
            [ -d "$path" ] && continue
          elif [ -e "$path" ]; then
            continue
          fi
          echo "$file:$line: \`$target\`: no such file or directory"
          broken=$((broken + 1))
        elif [[ "$path" =~ ^[A-Za-z0-9_.-]+\.md$ ]]; then
          checked=$((checked + 1))
          [ -e "$path" ] || [ -e "$dir/$path" ] && continue
          echo "$file:$line: \`$target\`: no such file at the root or in $dir/"
          broken=$((broken + 1))
        fi
        ;;
    esac
  done < <(extract "$f")
done

if [ "$broken" -gt 0 ]; then
  echo "check-links: $broken broken of $checked references in ${files[*]}" >&2
  exit 1
fi
echo "check-links: all $checked references in ${#files[@]} files resolve"
