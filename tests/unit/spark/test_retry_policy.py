"""Spark Connect clients wait out a down server about as long as pyspark's default, in short waits."""

from pyspark.sql.connect.client.retries import DefaultPolicy

from lakemeta.spark.session import prompt_retry_policy


def waits(policy: DefaultPolicy) -> list[float]:
    """The policy's waits in ms before jitter: the first is its initial backoff, each next one multiplied,
    capped at its maximum."""
    wait, out = float(policy.initial_backoff), []
    for _ in range(policy.max_retries):
        out.append(min(wait, policy.max_backoff))
        wait *= policy.backoff_multiplier
    return out


def test_a_restarted_server_is_found_within_5_s_and_an_outage_of_10_minutes_is_waited_out() -> None:
    ours, default = waits(prompt_retry_policy()), waits(DefaultPolicy())
    assert max(ours) == 5_000 and max(default) == 60_000
    assert 600_000 <= sum(ours) <= 610_000
    assert abs(sum(ours) - sum(default)) <= 0.1 * sum(default)
