#!/usr/bin/env bash
# Writes faultline's man pages from its own --help (CLI11) output, so they never drift from
# the binary: faultline.1, one page per subcommand (faultline-scan.1) and per nested one
# (faultline-collect-kmsg.1), each compressed with gzip -9n (no timestamp: reproducible).
#   scripts/gen-man.sh OUTDIR VERSION -- FAULTLINE [ARGS...]
# FAULTLINE may be preceded by an emulator (a cross build's CMAKE_CROSSCOMPILING_EMULATOR).
# Subcommands whose help says "(runs faultline-sim)" get no page: they run the simulator,
# which a production install does not ship. The page date is $SOURCE_DATE_EPOCH's, or none.
# Called by the faultline_dist target (cmake/Install.cmake).
set -euo pipefail

if [ $# -lt 4 ] || [ "$3" != "--" ]; then
  echo "usage: $0 OUTDIR VERSION -- FAULTLINE [ARGS...]" >&2
  exit 2
fi
OUT=$1
VERSION=$2
shift 3
CMD=("$@")
DATE=""
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then DATE=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d); fi

# shellcheck disable=SC2016  # an awk program: its $ are awk's
# CLI11 help -> roff. The help is hand-wrapped text: prose lines are refilled, indented lines
# (examples, lists, tables) keep their own line, and each option or subcommand is a .TP entry.
ROFF_AWK='
# Escapes backslashes and the dashes of options (a word that starts with a dash: every
# dash in it) as \-, so that --redfish-user prints as typed and can be searched and pasted.
function esc(s,    out, i, c, prev, option) {
  gsub(/\\/, "\\e", s)
  out = ""; prev = " "; option = 0
  for (i = 1; i <= length(s); i++) {
    c = substr(s, i, 1)
    if (index(" ,([=`\"'"'"'|", prev) > 0) option = (c == "-")
    else if (c == " ") option = 0
    out = out (c == "-" && option ? "\\-" : c); prev = c
    # A comma inside a long token (JSON, lists) may end a line: \: is a break point, invisible.
    if (c == "," && substr(s, i + 1, 1) != " ") out = out "\\:"
  }
  return out
}
function line(s) { if (s ~ /^[.'"'"']/) s = "\\&" s; print s }
# Prose is filled; indented lines (examples, lists, tables) are kept as written (.nf), and a
# line that opens with a label ("Exit code: ...") starts a paragraph (`par`: .PP, or .br in
# the entry of an option, where .PP would end it).
function text(s, base, par) {
  if (s ~ /^[ \t]*$/) { fill(); print ".PP"; return }
  sub("^" base, "", s)
  if (s ~ /^ /) {
    if (!nofill) { print ".nf"; nofill = 1 }
  } else {
    fill()
    if (match(s, /^[A-Z][^:.]*:( |$)/) && RLENGTH <= 40) print par
  }
  line(esc(s))
}
function fill() { if (nofill) { print ".fi"; nofill = 0 } }
function heading(s) { fill(); print s }
function summary(s) {
  sub(/^faultline: /, "", s)
  if (match(s, /(: |\. )/)) s = substr(s, 1, RSTART - 1)
  sub(/\.$/, "", s)
  return s
}
BEGIN { state = "desc"; n = 0 }
state == "desc" && /^Usage: / {
  printf ".TH \"%s\" \"1\" \"%s\" \"faultline %s\" \"faultline manual\"\n", esc(toupper(page)), date, version
  print ".nh"  # never hyphenate: options and paths must read as typed
  print ".SH NAME"
  line(esc(page) " \\- " esc(summary(desc_first)))
  print ".SH SYNOPSIS"
  sub(/^Usage: [^ ]+/, "")
  line("\\fBfaultline\\fR" esc($0))
  heading(".SH DESCRIPTION")
  for (i = 1; i <= n; i++) text(desc[i], "", ".PP")
  state = "after"; next
}
state == "desc" { if (n == 0) desc_first = $0; else if (n == 1 && desc_first !~ /[.:]/) desc_first = desc_first " " $0; desc[++n] = $0; next }
/^(Positionals|Options|Subcommands):$/ { heading(".SH " toupper(substr($0, 1, length($0) - 1))); state = "section"; next }
state == "section" && /^$/ { state = "footer"; next }
# Text after the option lists (how it works, examples) goes under its own heading.
state == "footer" && /^$/ { next }
state == "footer" { heading(".SH NOTES"); state = "after" }
state == "section" && /^  [^ ]/ {
  term = $0; rest = ""
  sub(/^  /, "", term)
  if (match(term, /   */)) { rest = substr(term, RSTART + RLENGTH); term = substr(term, 1, RSTART - 1) }
  heading(".TP"); line("\\fB" esc(term) "\\fR")
  if (rest != "") line(esc(rest))
  next
}
state == "section" { text($0, "                              ", ".br"); next }
state == "after" && /^[^ ].*:$/ { heading(".SS " esc(substr($0, 1, length($0) - 1))); next }
state == "after" { text($0, "", ".PP") }
END {
  if (see_also != "") {
    heading(".SH SEE ALSO"); print ".ad l"
    k = split(see_also, names, " ")
    for (i = 1; i <= k; i++) {  # \- in a name: no line break inside it
      gsub(/-/, "\\-", names[i])
      printf "\\fB%s\\fR(1)%s\n", names[i], (i < k ? "," : "")
    }
  }
  fill()
}
'

# Prints the names of the subcommands listed in a help text, without the simulator's.
subcommands() {
  awk '
    /^Subcommands:$/ { in_list = 1; next }
    in_list && /^$/ { in_list = 0 }
    in_list && /^  [^ ]/ { flush(); name = $1; about = $0; next }
    in_list { about = about " " $0 }
    END { flush() }
    function flush() { if (name != "" && about !~ /runs faultline-sim/) print name; name = "" }
  '
}

PAGES=()
# Writes the page of `faultline WORDS...` and, depth first, of its subcommands.
page() {
  local help name see subs sub
  help=$("${CMD[@]}" "$@" --help) || { echo "gen-man: faultline $* --help failed" >&2; return 1; }
  name=faultline
  if [ $# -gt 0 ]; then name="faultline-$(IFS=-; echo "$*")"; fi
  subs=$(printf '%s\n' "$help" | subcommands)
  see=""  # page names, space-separated: awk -v would read a backslash in them as an escape
  if [ $# -gt 0 ]; then see=faultline; fi
  for sub in $subs; do see="$see${see:+ }$name-$sub"; done
  printf '%s\n' "$help" | awk -v page="$name" -v version="$VERSION" \
    -v date="$DATE" -v see_also="$see" "$ROFF_AWK" >"$OUT/$name.1"
  PAGES+=("$name")
  for sub in $subs; do page "$@" "$sub"; done
}

mkdir -p "$OUT"
rm -f "$OUT"/*.1 "$OUT"/*.1.gz
page
for p in "${PAGES[@]}"; do gzip -9nf "$OUT/$p.1"; done
echo "gen-man: ${#PAGES[@]} pages in $OUT"
