"""Host discovery for run_elastic, fed by the job's own Spark tasks.

Every alive task attempt is one elastic "host" with one slot, named
`<host name>-task<partition>.<attempt>` (a failed attempt is blacklisted by
the elastic driver and never comes back; Spark's retry of it registers under
a new attempt number, i.e. as a new host). So in run_elastic every rank has
local_rank 0 and local_size 1, as in upstream's elastic Spark; ranks that do
share a machine still use shared memory (the core groups them by host).
"""
from horovod_accel.runner.hosts import Host


def host_label(info):
    return f"{info['hostname']}-task{info['name']}"


class SparkTaskDiscovery:
    """The elastic driver calls find_available_hosts() from its discovery
    thread; the registry it reads is thread-safe."""

    def __init__(self, registry):
        self._registry = registry
        self._task_of_label = {}   # host label -> (task name, host name)

    def find_available_hosts(self):
        hosts = []
        for info in self._registry.alive():
            label = host_label(info)
            self._task_of_label[label] = (info["name"], info["hostname"])
            hosts.append(Host(label, 1))
        return hosts

    def task_of(self, slot):
        """The task name of a slot the elastic driver starts a worker in."""
        return self._task_of_label[slot.hostname][0]

    def where(self, label):
        """(task name, host name) of a host label this discovery reported."""
        return self._task_of_label.get(label, (None, label))

    def describe(self):
        registered, alive = self._registry.counts()
        return f"the job's Spark tasks: {alive} alive of {registered} registered"
