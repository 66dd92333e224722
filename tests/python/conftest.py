"""Session fixtures shared by several test modules."""
import pytest

import wheel_build


@pytest.fixture(scope="session")
def wheels(tmp_path_factory):
    """{distribution name: path} of the core and plugin wheels, built once per
    session by scripts/build_wheels.sh (test_wheels.py and
    test_wheels_in_container.py both install them)."""
    return wheel_build.build_wheels(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="session")
def sdist(tmp_path_factory):
    """The core's source archive (horovod_accel-<v>.tar.gz), built from the
    checkout with setuptools' sdist (MANIFEST.in says what it carries)."""
    return wheel_build.build_sdist(tmp_path_factory.mktemp("sdist"))
