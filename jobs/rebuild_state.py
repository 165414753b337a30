"""spark-submit entry point: drop the state and recompute it (lakemeta.orchestration.steps.rebuild_state)."""

from lakemeta.orchestration.steps import job_parser, run_job

if __name__ == "__main__":
    run_job(job_parser("rebuild_state").parse_args())
