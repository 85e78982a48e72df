"""The example plugin's own test configuration, as its author keeps it: the mark its slow tests carry."""

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gloo: relays over torch.distributed gloo processes on 127.0.0.1")
