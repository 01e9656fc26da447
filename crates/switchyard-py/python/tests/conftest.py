"""One in-process mock provider for the whole session; the built-in `mock` backend points
at it (MOCK_BASE_URL), so every test talks HTTP to a real server on loopback."""

import pytest

import switchyard


@pytest.fixture(scope="session", autouse=True)
def mock_server():
    with switchyard.mock() as server:
        yield server


@pytest.fixture
def llm():
    return switchyard.llm("mock/echo")
