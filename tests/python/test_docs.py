"""Docs stay in step with the code: docs/settings.md shows exactly the rows of
the one settings table (csrc/common/util/settings_table.h), as the Python
view renders them."""
from launch_util import REPO


def test_settings_doc_matches_the_settings_table():
    from horovod_accel.common import settings
    page = (REPO / "docs" / "settings.md").read_text()
    for scope in ("job", "core", "python"):
        assert settings.markdown(scope) in page, (
            f"docs/settings.md is out of date with the {scope} settings of "
            f"csrc/common/util/settings_table.h; regenerate its tables with "
            f"`python -m horovod_accel.common.settings`")
