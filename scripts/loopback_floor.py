#!/usr/bin/env python3
# The kernel's floor of a served world's network cost per player and tick (docs/BENCHMARKS.md,
# "Where the server's network time goes"): the kernel CPU (getrusage system time, not wall time)
# of one small loopback TCP send — which on loopback also runs the peer's receive path in
# softirq, in the sender's context — and of the recv that takes it, measured apart, over many
# connected pairs in this process.
#
#   python3 scripts/loopback_floor.py [PAIRS=2000] [ROUNDS=50] [BYTES=75]
import resource, socket, sys
args = [int(a) for a in sys.argv[1:4]]
pairs, rounds, size = args + [2000, 50, 75][len(args):]
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(4096)
conns = []
for _ in range(pairs):
    c = socket.create_connection(ls.getsockname()); s, _ = ls.accept()
    for x in (c, s): x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conns.append((s, c))
msg = b"x" * size
st = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_stime
send_t = recv_t = 0.0
for _ in range(rounds):
    t = st()
    for s, c in conns: s.send(msg)
    t2 = st(); send_t += t2 - t
    for s, c in conns: c.recv(4096)
    recv_t += st() - t2
n = pairs * rounds
print(f"{size} B over {pairs} pairs, {n} each: send {1e6*send_t/n:.2f} µs, recv {1e6*recv_t/n:.2f} µs kernel CPU")
