# Shared by the shell test scripts: a scratch directory and check helpers.
# Source it after setting `set -uo pipefail`; it defines $tmp (removed on
# exit), the counters, and check / capture / expect_out / expect_eq / finish.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
passes=0

check() {  # check NAME EXPECTED_STATUS COMMAND...
  local name=$1 want=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL $name: exit $got, wanted $want"; cat "$tmp/out" "$tmp/err"
    failures=$((failures + 1))
  else
    passes=$((passes + 1))
  fi
}
expect_out() {  # expect_out NAME PATTERN: the last command's stdout+stderr matches
  if grep -qE -- "$2" "$tmp/out" "$tmp/err"; then
    passes=$((passes + 1))
  else
    echo "FAIL $1: output lacks /$2/"; cat "$tmp/out" "$tmp/err"
    failures=$((failures + 1))
  fi
}
expect_text() {  # expect_text NAME TEXT: the last command's stdout+stderr holds TEXT as it is
  if grep -qF -- "$2" "$tmp/out" "$tmp/err"; then
    passes=$((passes + 1))
  else
    echo "FAIL $1: output lacks '$2'"; cat "$tmp/out" "$tmp/err"
    failures=$((failures + 1))
  fi
}
capture() {  # capture NAME FILE COMMAND...: COMMAND's stdout into FILE; passes when it exits 0
  # and printed something. What a test compares must come from here (or check), never
  # from "$(command | filter)", which drops the command's exit status: a failed command
  # would then print nothing and compare equal to another failed command.
  local name=$1 file=$2
  shift 2
  "$@" >"$file" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne 0 ] || [ ! -s "$file" ]; then
    echo "FAIL $name: exit $got, $(wc -c <"$file") bytes on stdout, wanted exit 0 and output"
    cat "$tmp/err"
    failures=$((failures + 1))
  else
    passes=$((passes + 1))
  fi
}
expect_eq() {  # expect_eq NAME GOT WANTED
  if [ "$2" == "$3" ]; then
    passes=$((passes + 1))
  else
    echo "FAIL $1: got '$2', wanted '$3'"
    failures=$((failures + 1))
  fi
}
finish() {  # the closing line CTest output shows, and the exit status
  echo "$passes passed, $failures failed"
  [ "$failures" -eq 0 ]
}
expect_no_out() {  # expect_no_out NAME PATTERN: the last command's stdout+stderr does not match
  if grep -qE -- "$2" "$tmp/out" "$tmp/err"; then
    echo "FAIL $1: output has /$2/"; cat "$tmp/out" "$tmp/err"
    failures=$((failures + 1))
  else
    passes=$((passes + 1))
  fi
}
# Runs a command as an unprivileged user (root ignores file permissions);
# what it touches must be reachable by that user, so $tmp is made searchable.
if [ "$(id -u)" -eq 0 ]; then
  chmod 755 "$tmp"
  as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
else
  as_user() { "$@"; }
fi
# The stem `gulpdb extract` gives the frame files of ID: the rule of its
# --help written out again, with a 64-bit FNV-1a checked against published
# test vectors.
frame_stem() {
  /usr/bin/python3 - "$1" <<'PY'
import re, sys
def fnv1a64(data):
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) % 2**64
    return h
assert fnv1a64(b"a") == 0xaf63dc4c8601ec8c and fnv1a64(b"foobar") == 0x85944171f73967e8
ident = sys.argv[1].encode("utf-8", "surrogateescape")
text = ident.decode("utf-8")
if (re.fullmatch(r"[A-Za-z0-9._-]+", text) and not text.startswith(".") and len(ident) <= 200
        and not re.search(r"-[0-9a-f]{8}$", text)):
    print(text)
else:
    safe = "".join(c if re.fullmatch(r"[A-Za-z0-9._-]", c) and not (i == 0 and c == ".") else "_"
                   for i, c in enumerate(text))
    print("%s-%s" % (safe[:200], ("%016x" % fnv1a64(ident))[:8]))
PY
}
