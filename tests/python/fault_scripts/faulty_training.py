"""faulty_training.py MODE

Runs a loop of allreduces through horovod.torch; one rank misbehaves:
  sigkill      rank 1 prints 'KILLED_AT <time>' and SIGKILLs itself in iteration 20
               (horovodrun must stop the job)
  vanish       rank 1 leaves with os._exit(0) (no shutdown, no error) after iteration 5;
               rank 0 must get HorovodInternalError instead of hanging
  shutdown     rank 1 calls hvd.shutdown() while rank 0 waits on an allreduce;
               rank 0 must get HorovodInternalError saying Horovod was shut down
  sigstop      rank 1 freezes itself (SIGSTOP) in iteration 20; rank 0 must get
               HorovodInternalError naming rank 1 within HOROVOD_GLOO_TIMEOUT_SECONDS
               (and exits non-zero, so horovodrun ends the job)
  stall        every rank submits a tensor no other rank submits; the stall
               inspector (HOROVOD_STALL_SHUTDOWN_TIME_SECONDS) must fail both,
               naming the missing ranks
Rank 0 prints 'CAUGHT <type>: <message>' when it sees the expected error.
"""
import os
import signal
import sys
import time

import torch

import horovod.torch as hvd

mode = sys.argv[1]
hvd.init()
rank = hvd.rank()
t = torch.ones(1000)


def caught(exc):
    print(f"CAUGHT {type(exc).__name__}: {exc}", flush=True)


if mode == "sigkill":
    # Prints the moment of the kill so the test can measure how long the
    # launcher takes to end the job after it.
    for i in range(1000):
        if rank == 1 and i == 20:
            print(f"KILLED_AT {time.time():.3f}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        hvd.allreduce(t, name="loop")
    sys.exit(0)

if mode == "sigstop":
    for i in range(1000):
        if rank == 1 and i == 20:
            os.kill(os.getpid(), signal.SIGSTOP)
        try:
            hvd.allreduce(t, name="loop")
        except hvd.HorovodInternalError as e:
            caught(e)
            sys.exit(3)
    sys.exit("rank 0 finished 1000 allreduces although rank 1 froze")

if mode == "vanish":
    for i in range(5):
        hvd.allreduce(t, name="loop")
    if rank == 1:
        os._exit(0)
    try:
        for i in range(1000):
            hvd.allreduce(t, name="loop")
    except hvd.HorovodInternalError as e:
        caught(e)
        sys.exit(0)
    sys.exit("rank 0 finished 1000 allreduces without its peer")

if mode == "shutdown":
    hvd.allreduce(t, name="warmup")
    if rank == 1:
        hvd.barrier()  # rank 0 has its allreduce enqueued before this returns
        hvd.shutdown()
        sys.exit(0)
    handle = hvd.allreduce_async(t, name="never_matched")
    hvd.barrier()
    try:
        hvd.synchronize(handle)
    except hvd.HorovodInternalError as e:
        caught(e)
        sys.exit(0)
    sys.exit("allreduce completed although rank 1 shut down")

if mode == "stall":
    try:
        hvd.allreduce(t, name=f"only_on_rank_{rank}")
    except hvd.HorovodInternalError as e:
        if rank == 0:
            caught(e)
        sys.exit(0)
    sys.exit("a tensor submitted by one rank only completed")

sys.exit(f"unknown mode {mode}")
