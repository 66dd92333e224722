"""Docs stay in step with the code: docs/settings.md lists exactly the
options of the core's config registry, with the same defaults and docs."""
import re

from launch_util import REPO


def test_settings_doc_matches_config_registry():
    from horovod_accel import _core
    rows = re.findall(r"^\| `([^`]+)` \| \w+ \| `([^`]*)` \| (.*) \|$",
                      (REPO / "docs" / "settings.md").read_text(), re.M)
    assert rows == [tuple(o) for o in _core.config_table()], \
        "docs/settings.md is out of date with csrc/common/util/config.cc"
