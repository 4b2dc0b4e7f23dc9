#!/bin/sh
# Runs a test that fails on today's code because of a known fault (issue 18 names them): passes
# when the command fails or crashes, fails when it succeeds — so a fix shows up here, and the fix
# then registers the test as an ordinary one.
#   expect_failure.sh "<fault>" command [args...]
fault=$1
shift
"$@"
rc=$?
if [ "$rc" -eq 0 ]; then
  echo "expect_failure: passed, but it is expected to fail ($fault): if that is fixed, register it as a plain test"
  exit 1
fi
echo "expect_failure: failed as expected, exit $rc ($fault)"
exit 0
