#!/usr/bin/env bash
# check-docs.sh - the documentation says what the headers do (run by `make test`).
#
# Fails (exit 1, one line per problem) when
#   1. a header (ringbuf*.h) reads a configuration macro that no document
#      names. "Reads": a RINGBUF_* name in a #if, #ifdef, #ifndef or #elif
#      line (continuation lines joined, comments dropped). Not options, and so
#      not required: names with a double underscore (RINGBUF__X, RINGBUF_FTRACE__X:
#      internal), a header's include guard (ringbuf_trace.h: RINGBUF_TRACE_H)
#      and its implementation switch (RINGBUF_TRACE_IMPLEMENTATION_INCLUDED).
#      "Documents": README.md, docs/**.md, or the opening comment block of a
#      header (its text up to the first "*/"), naming the macro as a word;
#   2. a relative link in README.md or docs/**.md names a file that does not
#      exist, or a #fragment that is not a heading of its target (GitHub's
#      anchors: lower case, punctuation dropped, spaces to '-', repeats -1, -2);
#   3. README.md's first program is not examples/basic.c byte for byte (the
#      README shows the file and the cc line that builds it), or README.md
#      has more than 300 lines;
#   4. ringbuf.h's TABLE OF CONTENTS does not list its "/* ==== >>name"
#      sections, every one, in order (>>cxx, a subsection, aside).
#
# Usage: tests/check-docs.sh [ROOT]   (default: the repository holding this script)
set -euo pipefail

root=${1:-}
if [ -z "$root" ]; then
	root=$(cd "$(dirname "$0")/.." && pwd)
	[ -e "$root/ringbuf.h" ] || root=$PWD   # the script moved deeper: make runs it from the top
fi
cd "$root"
fail=0
err() { echo "check-docs: $*" >&2; fail=1; }

shopt -s nullglob globstar
headers=(ringbuf*.h)
docs=(README.md docs/**/*.md)
[ ${#headers[@]} -gt 0 ] || { err "no ringbuf*.h in $root"; exit 1; }

# ---- 1. configuration macros ----------------------------------------------

# The documentation as one text: the documents and each header's opening block.
doctext=$(mktemp)
trap 'rm -f "$doctext"' EXIT
cat "${docs[@]}" >"$doctext"
for h in "${headers[@]}"; do
	awk '{ print } /\*\// { exit }' "$h" >>"$doctext"
done

# Print "LINE NAME" for every RINGBUF_* name a conditional directive of $1 tests.
conditional_macros() {
	awk '
	{
		if (cont != "") { line = cont " " $0; } else { line = $0; start = NR; }
		if (line ~ /\\$/) { cont = substr(line, 1, length(line) - 1); next; }
		cont = "";
		if (line !~ /^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef)([ \t(!]|$)/) next;
		gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", line);   # /* comments */ on the line
		sub(/\/\*.*$/, "", line);                          # a comment that goes on
		sub(/\/\/.*$/, "", line);
		while (match(line, /RINGBUF_[A-Za-z0-9_]+/)) {
			print start, substr(line, RSTART, RLENGTH);
			line = substr(line, RSTART + RLENGTH);
		}
	}' "$1"
}

checked=0
for h in "${headers[@]}"; do
	guard=$(basename "$h" .h | tr 'a-z.-' 'A-Z__')_H
	impl=${guard%_H}_IMPLEMENTATION_INCLUDED
	while read -r line name; do
		case $name in
		*__*) continue ;;                       # internal
		"$guard" | "$impl") continue ;;         # include guard, implementation switch
		esac
		checked=$((checked + 1))
		grep -qw -- "$name" "$doctext" ||
			err "$h:$line reads $name, which no document names (README.md, docs/, a header's opening comment block)"
	done < <(conditional_macros "$h" | sort -u -k2,2)
done

# ---- 2. relative links -------------------------------------------------------

# Print the anchors of markdown file $1, one a line (headings outside code blocks).
anchors() {
	awk '
	/^[ \t]*(```|~~~)/ { fence = !fence; next }
	fence { next }
	/^#+[ \t]/ {
		h = $0;
		sub(/^#+[ \t]+/, "", h); sub(/[ \t#]+$/, "", h);
		h = tolower(h);
		gsub(/[^a-z0-9 _-]/, "", h);    # GitHub drops punctuation (and symbols such as x)
		gsub(/ /, "-", h);
		n = seen[h]++;
		print (n ? h "-" n : h);
	}' "$1"
}

# Print "LINE TARGET" for each link ](TARGET) of markdown file $1 outside code.
links() {
	awk '
	/^[ \t]*(```|~~~)/ { fence = !fence; next }
	fence { next }
	{
		line = $0;
		gsub(/`[^`]*`/, "", line);       # code spans
		while (match(line, /\]\([^) \t]+\)/)) {
			print NR, substr(line, RSTART + 2, RLENGTH - 3);
			line = substr(line, RSTART + RLENGTH);
		}
	}' "$1"
}

nlinks=0
for d in "${docs[@]}"; do
	dir=$(dirname "$d")
	while read -r line target; do
		case $target in
		http://* | https://* | mailto:*) continue ;;
		esac
		nlinks=$((nlinks + 1))
		path=${target%%#*}
		frag=
		case $target in *'#'*) frag=${target#*#} ;; esac
		if [ -z "$path" ]; then
			file=$d
		else
			file=$dir/$path
			if [ ! -e "$file" ]; then
				err "$d:$line: link to $target: no such file"
				continue
			fi
		fi
		if [ -n "$frag" ]; then
			case $file in
			*.md) anchors "$file" | grep -qxF -- "$frag" ||
				err "$d:$line: link to $target: no heading with anchor #$frag in $file" ;;
			*) err "$d:$line: link to $target: a fragment into a file that is not markdown" ;;
			esac
		fi
	done < <(links "$d")
done

# ---- 3. README: the first program, the length -----------------------------------

lines=$(wc -l <README.md)
[ "$lines" -le 300 ] || err "README.md has $lines lines (at most 300: move the rest to docs/)"
if ! awk '
	!found && index($0, "[`examples/basic.c`](examples/basic.c)") { found = 1; next }
	found == 1 && /^```c[ \t]*$/ { found = 2; next }
	found == 2 && /^```[ \t]*$/ { exit }
	found == 2 { print }' README.md | cmp -s - examples/basic.c; then
	err "README.md: the code block after [\`examples/basic.c\`](examples/basic.c) is not examples/basic.c"
fi

# ---- 4. ringbuf.h's table of contents: every section, in order -----------------

# The anchors listed under TABLE OF CONTENTS (but >>cxx, a subsection) against
# the "/* ==== >>name" section headers, in file order (issue 23: the list had
# left out the 2nd and 4th largest sections).
toc=$(awk '/TABLE OF CONTENTS/ { on = 1; next } on && /^ \*[ \t]*$/ { exit }
	on && match($0, /^ \* +>>[a-z]+/) { a = substr($0, RSTART, RLENGTH); sub(/^ \* +/, "", a); if (a != ">>cxx") print a }' ringbuf.h)
secs=$(awk 'match($0, /^\/\* ==== >>[a-z]+/) { a = substr($0, RSTART, RLENGTH); sub(/^\/\* ==== /, "", a); print a }' ringbuf.h)
if [ "$toc" != "$secs" ]; then
	err "ringbuf.h: the table of contents ($(echo $toc)) is not the section headers in order ($(echo $secs))"
fi
nsecs=$(echo "$secs" | wc -l)

if [ $fail = 0 ]; then
	echo "check-docs: ringbuf.h's table of contents lists its $nsecs sections in order;"
	echo "check-docs: ${#headers[@]} headers, $checked options read, each documented; $nlinks relative links in ${#docs[@]} documents resolve; README's first program is examples/basic.c"
fi
exit $fail
