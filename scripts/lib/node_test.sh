# Sourced by the scripts that run the nakama-js suites with node's test runner
# (compat.sh, cluster.sh, console.sh, world_view.sh).
#
# force_exit: `--test-force-exit` ends a test file's process once its tests have finished.
# Without it a file whose clients leave a socket or timer open stays alive until the server
# drops the connection — about 15–20 s per file, most of the suite's wall time (23 files: the
# nakama-js suite took 434 s per backend, its tests' own time under a minute). A leaked socket
# is the test's, not the server's: the server's side is checked by the tests themselves.
# Node 20.14 and later; nothing on an older node.
force_exit=""
if node --help 2>/dev/null | grep -q -- '--test-force-exit'; then
  force_exit="--test-force-exit"
fi
