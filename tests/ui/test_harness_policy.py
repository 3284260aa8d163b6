"""The UI tests' policy when the browser is missing: skip on a user's machine, fail in CI."""

import pytest

from .ui_harness import HOW_TO_ENABLE, running_in_ci, when_browser_missing

REASON = f"no Chromium at /usr/bin/chromium; {HOW_TO_ENABLE}"


@pytest.mark.parametrize("value", ["true", "1", "yes", "True", "gitlab"])
def test_ci_fails_the_browser_tests_and_says_why(value):
    outcome, message = when_browser_missing(REASON, {"CI": value})
    assert outcome == "fail"
    assert message == f"CI must run the browser UI tests, but {REASON}"


@pytest.mark.parametrize("environ", [{}, {"CI": ""}, {"CI": "0"}, {"CI": "false"}, {"CI": "No"}])
def test_a_users_machine_skips_them_with_how_to_enable(environ):
    assert not running_in_ci(environ)
    assert when_browser_missing(REASON, environ) == ("skip", REASON)
    assert "apt-get install chromium" in REASON and "pip install playwright" in REASON
