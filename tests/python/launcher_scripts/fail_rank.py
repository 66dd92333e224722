"""fail_rank.py FAILING_RANK (exit:CODE | sigkill) PID_DIR

The failing rank writes stderr lines, then exits with CODE or SIGKILLs itself.
Every other rank starts a `sleep 60` child (to check that process groups are
cleaned), records both pids in PID_DIR, prints 'ready' and sleeps 60 s.
"""
import os
import signal
import subprocess
import sys
import time

failing, how, pid_dir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
rank = int(os.environ["HOROVOD_RANK"])
if rank == failing:
    time.sleep(0.3)
    for i in range(30):
        print(f"noise line {i}", file=sys.stderr)
    print(f"FATAL: boom from rank {rank}", file=sys.stderr, flush=True)
    if how == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    sys.exit(int(how.split(":")[1]))
child = subprocess.Popen(["sleep", "60"])
with open(os.path.join(pid_dir, f"rank{rank}.pids"), "w") as f:
    f.write(f"{os.getpid()} {child.pid}\n")
print("ready", flush=True)
time.sleep(60)
