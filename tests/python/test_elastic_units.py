"""The pure parts of elastic mode: round planning, the host blacklist and its
cooldowns, discovery output parsing and the protocol's value formats."""
import pytest

from horovod_accel.common import elastic_protocol as proto
from horovod_accel.runner.elastic.assignment import plan_round, same_plan
from horovod_accel.runner.elastic.discovery import DiscoveryError, HostDiscoveryScript
from horovod_accel.runner.elastic.host_manager import HostManager
from horovod_accel.runner.elastic import settings
from horovod_accel.runner.hosts import Host


def test_first_round_fills_hosts_in_order_up_to_max_np():
    plan = plan_round([Host("a", 2), Host("b", 2)], [], max_np=3)
    assert plan.placement == [("a", None), ("a", None), ("b", None)]
    topo = plan.topology()
    assert [(t["rank"], t["local_rank"], t["local_size"], t["cross_rank"], t["cross_size"])
            for t in topo] == [(0, 0, 2, 0, 2), (1, 1, 2, 0, 1), (2, 0, 1, 1, 2)]


def test_survivors_keep_low_ranks_and_hosts_with_survivors_come_first():
    # "a" came back (or grew) but holds no survivor: the survivors' host goes first,
    # so rank 0 always holds the current state.
    plan = plan_round([Host("a", 1), Host("b", 2)], [("w3", "b")])
    assert plan.placement == [("b", "w3"), ("b", None), ("a", None)]
    assert plan.survivors() == ["w3"] and plan.new_count() == 2


def test_survivors_are_placed_before_new_slots_under_max_np():
    plan = plan_round([Host("a", 2), Host("b", 1)], [("w1", "a"), ("w2", "b")], max_np=2)
    assert plan.placement == [("a", "w1"), ("b", "w2")] and plan.removed == []


def test_survivors_on_removed_or_shrunk_hosts_are_removed():
    plan = plan_round([Host("b", 1)], [("w1", "a"), ("w2", "b"), ("w3", "b")])
    assert plan.placement == [("b", "w2")] and plan.removed == ["w1", "w3"]


def test_same_plan():
    a = plan_round([Host("a", 1)], [("w1", "a")])
    assert same_plan(a, plan_round([Host("a", 1)], [("w1", "a")]))
    assert not same_plan(a, plan_round([Host("a", 2)], [("w1", "a")]))


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_blacklist_forever_by_default():
    hm = HostManager()
    hm.update([Host("a", 1), Host("b", 1)])
    assert hm.blacklist("a") is None
    assert [h.name for h in hm.available()] == ["b"] and not hm.all_blacklisted()
    hm.blacklist("b")
    assert hm.available() == [] and hm.all_blacklisted()


def test_cooldown_doubles_is_capped_and_returns_host_as_new():
    clock = Clock()
    hm = HostManager(cooldown_range=(2, 5), now=clock, rng=type("R", (), {"random": lambda s: 0.5})())
    hm.update([Host("a", 1), Host("b", 1)])
    assert hm.blacklist("a") == 2 + 0.5 * 2          # MIN * 2**0 + U * MIN
    clock.t = 2.9
    assert [h.name for h in hm.available()] == ["b"]
    clock.t = 3.0
    assert [h.name for h in hm.available()] == ["b", "a"]  # back, placed last
    assert hm.blacklist("a") == 5                    # 2 * 2 + 1 = 5 (capped at MAX)
    assert hm.blacklist("a") == 5                    # again during it: the same cooldown
    assert not hm.all_blacklisted()                  # a cooldown will bring it back


def test_workers_of_one_lost_host_count_as_one_failure():
    """A host with 4 slots is lost: its 4 workers fail together. The cooldown
    is that of one failure (not escalated 4 times), and what is left of it is
    returned for the later workers; after it, the next loss doubles it."""
    clock = Clock()
    hm = HostManager(cooldown_range=(2, 60), now=clock, rng=type("R", (), {"random": lambda s: 0.0})())
    hm.update([Host("a", 4), Host("b", 4)])
    assert hm.blacklist("a") == 2
    clock.t = 0.5
    assert [hm.blacklist("a") for _ in range(3)] == [1.5, 1.5, 1.5]
    clock.t = 2.0
    assert [h.name for h in hm.available()] == ["b", "a"]
    assert hm.blacklist("a") == 4                    # the second loss of the host


def test_host_order_is_first_seen_and_a_returning_host_is_new():
    hm = HostManager()
    hm.update([Host("a", 1), Host("b", 1)])
    hm.update([Host("c", 1), Host("b", 1), Host("a", 1)])
    assert [h.name for h in hm.available()] == ["a", "b", "c"]
    hm.update([Host("b", 1), Host("c", 1)])
    hm.update([Host("a", 1), Host("b", 1), Host("c", 1)])
    assert [h.name for h in hm.available()] == ["b", "c", "a"]


def test_discovery_parsing():
    d = HostDiscoveryScript("x", slots_per_host=4)
    assert d.parse("a:2\n# comment\n\nb\na:3\n") == [Host("a", 2), Host("b", 4)]
    with pytest.raises(DiscoveryError, match="without a slot count"):
        HostDiscoveryScript("x").parse("a\n")
    with pytest.raises(DiscoveryError, match="line 1"):
        HostDiscoveryScript("x").parse("a:b:c d\n")


def test_protocol_formats():
    topo = dict(rank=1, size=3, local_rank=0, local_size=1, cross_rank=1, cross_size=2)
    assert proto.parse_assignment(proto.format_assignment(topo, 7).encode()) == (topo, 7)
    assert proto.parse_assignment(proto.REMOVED) is None
    assert proto.parse_hosts_event(None) == (0, 0)
    assert proto.parse_hosts_event(proto.format_hosts_event(5, 3)) == (5, 3)


def test_settings_defaults_and_env(monkeypatch):
    monkeypatch.setenv("HOROVOD_ELASTIC_TIMEOUT", "42")
    assert settings.resolve(2, None, None, None, "s.sh", False, None, None, None) == (2, 2, None, 42.0)
    assert settings.resolve(None, 1, 4, None, None, True, 5, 0, (1, 2)) == (1, 1, 4, 5.0)
    with pytest.raises(ValueError, match="runs on Gloo"):
        settings.resolve(2, 1, None, None, "s.sh", False, None, None, None, use_mpi=True)
    with pytest.raises(ValueError, match="expected 1 <= MIN <= MAX"):
        settings.resolve(2, 1, None, None, "s.sh", False, None, None, (3, 2))


class _FakeStore:
    def __init__(self):
        self.data = {}

    def set_local(self, key, value):
        self.data[key] = value

    def get_local(self, key):
        return self.data.get(key)


def _driver_after_first_round(max_np):
    from horovod_accel.runner.elastic.discovery import FixedHosts  # noqa: PLC0415
    from horovod_accel.runner.elastic.driver import ElasticDriver, ElasticSpec  # noqa: PLC0415
    store = _FakeStore()
    spec = ElasticSpec(num_proc=1, min_np=1, max_np=max_np, discovery=FixedHosts([]),
                       command=["true"], env={}, secret="s", store=store, store_port=0,
                       store_addr=lambda h: "127.0.0.1", is_local=lambda h: True)
    d = ElasticDriver(spec)
    d._start = lambda w, topo, round_: None  # no processes: the plan is what is tested
    d.hosts.update([Host("a", 1)])
    d._form_round()
    assert d.round == 1 and d.plan.placement == [("a", "w1")]
    return d, store


def test_a_host_change_that_keeps_the_plan_is_not_announced():
    """After the first round spawned its workers, a new host the job cannot
    use (max_np reached) leaves the running plan as it is: no reset."""
    d, store = _driver_after_first_round(max_np=1)
    d._on_hosts([Host("a", 1), Host("b", 1)])
    assert d.hosts_seq == 0 and proto.HOSTS_EVENT_KEY not in store.data


def test_a_host_the_job_can_grow_to_is_announced_as_an_addition():
    d, store = _driver_after_first_round(max_np=None)
    d._on_hosts([Host("a", 1), Host("b", 1)])
    assert store.data[proto.HOSTS_EVENT_KEY] == proto.format_hosts_event(1, 1)
