"""Scale-out: two dispatcher nodes (standing in for two hosts) share one PostgreSQL database and one
Redis broker; a batch of submissions is split between them and each is scored exactly once."""

from __future__ import annotations

import pytest

from tests.leaderboard.test_pipeline_worker import Worker, deployment, harness, scored, services, wait_for  # noqa: F401 - fixtures

N_SUBMISSIONS = 4


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.services
@pytest.mark.parametrize("deployment", [pytest.param("services", marks=pytest.mark.services)], indirect=True)
def test_two_dispatchers_split_a_batch_and_score_each_submission_once(deployment, tmp_path):  # noqa: F811
    """Both nodes take work from the shared queue; every evaluation ends scored, claimed exactly once."""
    ids = harness(deployment, "setup", 1, N_SUBMISSIONS)["evaluations"]
    nodes = [Worker(deployment, f"host{n}", tmp_path / f"host{n}.log") for n in (1, 2)]
    try:
        states = [wait_for(lambda i=i: scored(deployment, i), 400, f"evaluation {i}", nodes[0]) for i in ids]
    finally:
        for node in nodes:
            node.stop()
    assert [s["status"] for s in states] == ["scored"] * N_SUBMISSIONS, [s["failure_reason"] for s in states]
    assert all(s["attempts"] == 1 and s["result_rows"] == 1 for s in states)  # exactly once each
    hosts = {s["worker"].split("@")[0] for s in states}
    assert hosts == {"host1", "host2"}, hosts  # the batch really was split between the two nodes
    finals = {s["final"] for s in states}
    assert len(finals) == 1  # the same bundle scores the same on either host
