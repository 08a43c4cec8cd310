"""System checks of the deployment's configuration."""

from __future__ import annotations

import pytest
from django.core import checks
from django.core.management import call_command


def preview_warnings() -> list[checks.CheckMessage]:
    messages = checks.run_checks(include_deployment_checks=True)
    return [message for message in messages if message.id == "leaderboard.W001"]


def test_production_without_a_preview_host_is_warned(settings):
    """IWR_ENV=production with IWR_PREVIEW_ORIGIN empty: a warning saying previews share the site's host."""
    settings.IWR_ENV, settings.PREVIEW_ORIGIN = "production", ""
    [warning] = preview_warnings()
    assert warning.level == checks.WARNING
    assert "served from this site's own host name" in warning.msg and "IWR_PREVIEW_ORIGIN" in warning.msg
    assert "Content-Security-Policy" in warning.hint and "separate host is still recommended" in warning.hint


@pytest.mark.parametrize(("env", "origin"), [("production", "https://preview.example.org"), ("development", ""),
                                             ("test", "")])
def test_a_preview_host_or_another_environment_is_not_warned(settings, env, origin):
    """A separate preview origin, or a development or test site, raises nothing."""
    settings.IWR_ENV, settings.PREVIEW_ORIGIN = env, origin
    assert preview_warnings() == []


def test_manage_py_check_prints_the_warning_without_failing(settings, capsys):
    """`manage.py check --deploy` lists the warning under its id and still succeeds."""
    settings.IWR_ENV, settings.PREVIEW_ORIGIN = "production", ""
    call_command("check", deploy=True)
    assert "(leaderboard.W001) Live previews of submitted pages" in capsys.readouterr().err


def test_plain_check_stays_quiet_for_a_local_run(settings):
    """Without --deploy (migrate, runserver, scripts/run.sh) the preview-host warning is not raised."""
    settings.IWR_ENV, settings.PREVIEW_ORIGIN = "production", ""
    assert [m for m in checks.run_checks() if m.id == "leaderboard.W001"] == []
