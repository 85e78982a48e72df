"""A pytest plugin for the binding tests (``-p tests.reverse_order``): run the collected tests last to first."""


def pytest_collection_modifyitems(items):
    items.reverse()
