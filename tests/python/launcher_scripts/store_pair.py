"""Rank 0 sets a key that rank 1 waits for (blocking get), and the reverse;
both bump a shared counter."""
import os
import time

from horovod_accel.rendezvous.client import StoreClient

rank = int(os.environ["HOROVOD_RANK"])
with StoreClient.from_env() as store:
    store.add("arrived", 1)
    if rank == 0:
        time.sleep(0.5)  # make rank 1's get really wait
        store.set("greeting", "hello from rank 0")
        print("rank 0 got " + store.get("ack", timeout=30).decode())
    else:
        print("rank 1 got " + store.get("greeting", timeout=30).decode())
        store.set("ack", b"ack from rank 1")
    while int(store.get("arrived")) < 2:
        time.sleep(0.01)
    print(f"arrived={int(store.add('arrived', 0))}")
