"""horovod_accel's launcher: `horovodrun` (launch.py) and `horovod.run`.

The rendezvous store it serves to its ranks (server, client, wire protocol,
network helpers) is the package horovod_accel/rendezvous/, shared with the
core path (MPI bootstrap, elastic workers).

Modules, one purpose each:
  launch.py          entry point: plans the job, starts the store, runs the job
  args.py            the command line (upstream's flags)
  tunables.py        tuneable flags -> HOROVOD_* variables
  hosts.py           -H / --hostfile parsing and rank-to-slot assignment
  rank_process.py    starting one rank (local or ssh) and its environment
  output.py          prefixing/forwarding rank output, --output-filename
  job.py             watching ranks, fail-fast stop, failure report
  check_build.py     --check-build
  run_api.py         `horovod.run(func, ...)` / `horovod.runner.run`: runs a
                     function on every rank of a new job, returns the results
  run_task.py        one rank of such a job (`python -m ...run_task`)
  elastic/           the elastic driver (--min-np/--max-np, host discovery)
  util/              upstream's horovod.runner.util helpers (threads)

`run` is imported on first use (module __getattr__), so importing this
package stays cheap.
"""


def __getattr__(name):
    if name == "run":
        from horovod_accel.runner.run_api import run  # noqa: PLC0415
        globals()["run"] = run
        return run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
