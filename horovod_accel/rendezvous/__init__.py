"""The rendezvous store: the key-value store through which a job's ranks find
each other, used by the launcher (horovod_accel/runner/: horovodrun and
horovod.run serve it) and by the core path (horovod_accel/common/: under
mpirun rank 0 serves it; elastic workers read their assignments from it).

Modules, one purpose each:
  protocol.py  the store's wire protocol in Python (constants, framing); its
               one definition is the table csrc/common/store/wire_protocol.def,
               which the core's C++ client (csrc/common/store/tcp_store.cc)
               is built from
  server.py    the store server (RendezvousStoreServer)
  client.py    the Python client of the store (StoreClient): every Python
               module that talks to a store goes through it
  network.py   this machine's addresses and interfaces, local-host detection,
               the address remote hosts use to reach the store
"""
