"""Ranks for the tasks of a static horovod.spark.run job. Pure.

Tasks on one host (the same host_id: the machine as the core tells hosts
apart, so they share memory) get consecutive ranks and their local ranks;
hosts talk over Gloo. Hosts are ordered by their lowest partition (the host
of partition 0 first, so rank 0 runs where partition 0 does), tasks on a
host by partition. Local and cross ranks follow hosts.assign_slots, as in
a horovodrun job.
"""
from horovod_accel.runner import hosts as hosts_mod


def assign(tasks):
    """tasks: the registered task infos (name, partition, host_id, hostname).
    Returns ([SlotInfo] in rank order, {rank: task name}). SlotInfo.hostname
    is the task's host name, made unique ('name#2') if two hosts share one."""
    groups = {}
    for t in sorted(tasks, key=lambda t: t["partition"]):
        groups.setdefault(t["host_id"], []).append(t)
    names, used = {}, {}
    for host_id, members in groups.items():  # ordered by lowest partition
        base = members[0]["hostname"]
        used[base] = used.get(base, 0) + 1
        names[host_id] = base if used[base] == 1 else f"{base}#{used[base]}"
    hosts = [hosts_mod.Host(names[h], len(m)) for h, m in groups.items()]
    slots = hosts_mod.assign_slots(hosts, len(tasks))
    queue = {names[h]: list(m) for h, m in groups.items()}
    task_of_rank = {s.rank: queue[s.hostname].pop(0)["name"] for s in slots}
    return slots, task_of_rank


def describe(where):
    """call_records' describe() for ranks run in Spark tasks; where:
    {rank: (task name, host name)}, as far as known."""
    def describe_rank(rank):
        task, host = where.get(rank, (None, None))
        if task is None:
            return f"rank {rank}", host
        return f"rank {rank} (Spark task {task} on {host})", host
    return describe_rank
