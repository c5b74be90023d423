# Shared by the shell test scripts: a scratch directory and check helpers.
# Source it after setting `set -uo pipefail`; it defines $tmp (removed on
# exit), the counters, and check / expect_out / expect_eq / finish.
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
  if grep -qE "$2" "$tmp/out" "$tmp/err"; then
    passes=$((passes + 1))
  else
    echo "FAIL $1: output lacks /$2/"; cat "$tmp/out" "$tmp/err"
    failures=$((failures + 1))
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
