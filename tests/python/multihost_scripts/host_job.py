"""A rank of a job spread over namespace hosts (test_multihost.py), started by
horovodrun -H or by mpirun across the hosts.

    python host_job.py --hosts N [--train] [--die-at STEP]

Checks, on every rank:
  - topology: N distinct hosts (host name from gethostname); ranks on one
    host have distinct local ranks 0..local_size-1 and the host's rank count
    as local size; cross rank / size as upstream: the position among the
    hosts (in rank order) that have a rank with this local rank / their count;
  - collectives across hosts with exact expected values: allreduce (sum,
    min, max; float32, float64, int32, bfloat16; counts 0, 1, 1031 and
    1 Mi + 3), grouped allreduce, allgather with a different first dimension
    per rank, broadcast from the last rank, alltoall with uneven splits,
    reducescatter;
  - --train, after those: a small MLP with DistributedOptimizer; the loss
    falls and every rank ends with identical parameters. --die-at: the last
    rank SIGKILLs itself at that step.
Prints one "rank R ok host H local L/LS cross C/CS backends B ..." line per rank
(B: the CPU backends of the global process set).
"""
import argparse
import os
import socket
import sys

import torch

import horovod.torch as hvd
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "job_lib"))
from blob_training import train  # noqa: E402


def check_topology(n_hosts):
    me = (socket.gethostname(), hvd.local_rank(), hvd.local_size(), hvd.cross_rank(),
          hvd.cross_size())
    every = hvd.allgather_object(me, name="topology")
    hosts = []
    for name, *_ in every:
        if name not in hosts:
            hosts.append(name)
    assert len(hosts) == n_hosts, f"expected {n_hosts} hosts, ranks report {hosts}"
    for h in hosts:
        mine = [e for e in every if e[0] == h]
        assert sorted(e[1] for e in mine) == list(range(len(mine))), (h, mine)
        assert all(e[2] == len(mine) for e in mine), (h, mine)
    # Upstream's cross communicator: the ranks with one local rank, one per
    # host that has that many ranks, in host order.
    for name, local, _, cross, cross_size in every:
        peers = [h for h in hosts if any(e[0] == h and e[1] == local for e in every)]
        assert (cross, cross_size) == (peers.index(name), len(peers)), (name, local, every)
    return me


def expect_close(got, want, what):
    if got.dtype in (torch.bfloat16, torch.float16):
        ok = torch.allclose(got.float(), want.float(), rtol=1e-2, atol=1e-2)
    else:
        ok = torch.equal(got, want)
    assert ok, f"{what}: got {got.flatten()[:6].tolist()}... want {want.flatten()[:6].tolist()}..."


def check_collectives():
    rank, size = hvd.rank(), hvd.size()
    for dtype in (torch.float32, torch.float64, torch.int32, torch.bfloat16):
        for count in (0, 1, 1031, (1 << 20) + 3):
            base = torch.arange(count, dtype=torch.float64) % 7
            x = (base + rank).to(dtype)
            s = hvd.allreduce(x, op=hvd.Sum, name=f"sum.{dtype}.{count}")
            expect_close(s, (base * size + size * (size - 1) / 2).to(dtype), f"sum {dtype} {count}")
            lo = hvd.allreduce(x, op=hvd.Min, name=f"min.{dtype}.{count}")
            expect_close(lo, base.to(dtype), f"min {dtype} {count}")
            hi = hvd.allreduce(x, op=hvd.Max, name=f"max.{dtype}.{count}")
            expect_close(hi, (base + size - 1).to(dtype), f"max {dtype} {count}")
    grouped = hvd.grouped_allreduce([torch.full((5,), float(rank)), torch.full((3, 3), 2.0)],
                                    op=hvd.Sum, name="grouped")
    expect_close(grouped[0], torch.full((5,), size * (size - 1) / 2), "grouped[0]")
    expect_close(grouped[1], torch.full((3, 3), 2.0 * size), "grouped[1]")

    rows = hvd.allgather(torch.full((rank + 1, 2), float(rank)), name="gather")
    want = torch.cat([torch.full((r + 1, 2), float(r)) for r in range(size)])
    expect_close(rows, want, "allgather")

    b = hvd.broadcast(torch.full((1000,), float(rank)), root_rank=size - 1, name="bcast")
    expect_close(b, torch.full((1000,), float(size - 1)), "broadcast")

    splits = torch.tensor([r + 1 for r in range(size)])  # rank r gets r+1 rows from everyone
    sent = torch.cat([torch.full((r + 1,), float(rank * 100 + r)) for r in range(size)])
    got, received = hvd.alltoall(sent, splits=splits, name="a2a")
    assert received.tolist() == [rank + 1] * size, received
    expect_close(got, torch.cat([torch.full((rank + 1,), float(src * 100 + rank))
                                 for src in range(size)]), "alltoall")

    rs = hvd.reducescatter(torch.ones(size * 4, 3), op=hvd.Sum, name="rs")
    expect_close(rs, torch.full((4, 3), float(size)), "reducescatter")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--hosts", type=int, required=True)
    p.add_argument("--train", action="store_true")
    p.add_argument("--die-at", type=int, default=-1)
    a = p.parse_args()
    hvd.init()
    host, local, local_size, cross, cross_size = check_topology(a.hosts)
    check_collectives()
    detail = " collectives agree"
    if a.train:
        first, last = train(a.die_at, dying_rank=hvd.size() - 1)
        detail += f", loss {first:.3f} -> {last:.3f}, parameters agree"
    backends = ",".join(DEFAULT_RUNTIME.runtime().backends())  # of the global process set
    sys.stdout.write(f"rank {hvd.rank()} ok host {host} local {local}/{local_size} "
                     f"cross {cross}/{cross_size} backends {backends}{detail}\n")  # one write: no interleaving
    sys.stdout.flush()
    hvd.shutdown()


if __name__ == "__main__":
    main()
