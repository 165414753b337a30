"""spark-submit entry point: commit the run's batches (lakemeta.orchestration.steps.commit_batches)."""

from lakemeta.orchestration.steps import job_parser, run_job

if __name__ == "__main__":
    run_job(job_parser("commit_batches").parse_args())
